"""Enum values the request paraphrases: "unsolved" for ``open``, "newest first" for ``desc``, "most starred" for
``stars``, "fermées" for ``closed``. A value counts as stated when a word or phrase of :data:`SYNONYMS` for it (in
English or one of the other languages listed) appears in the user's words; the literal value is checked by the
caller."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from nexus_agent.agent.forms.base import Context, says

# canonical value (lower case, words joined by "_") -> phrases that state it; a phrase matches at a word start, so
# "ferm" covers fermé, fermée, fermées
SYNONYMS: dict[str, tuple[str, ...]] = {
    "open": (
        "unsolved",
        "unresolved",
        "outstanding",
        "active",
        "pending",
        "not closed",
        "still open",
        "ouvert",
        "abiert",
        "offen",
        "apert",
        "abert",
        "openstaand",
        "otwart",
        "открыт",
        "未解決",
        "未解决",
        "オープン",
    ),
    "closed": (
        "resolved",
        "solved",
        "finished",
        "done",
        "fixed",
        "not open",
        "ferm",
        "cerrad",
        "geschlossen",
        "erledigt",
        "chius",
        "fechad",
        "gesloten",
        "zamknię",
        "закрыт",
        "クローズ",
        "已关闭",
        "关闭",
    ),
    "all": (
        "every",
        "any state",
        "regardless",
        "open or closed",
        "open and closed",
        "tous",
        "toutes",
        "todos",
        "todas",
        "alle",
        "tutti",
        "tutte",
        "wszystk",
        "все",
        "すべて",
        "全部",
    ),
    "merged": ("merge", "fusionn", "fusionad", "gemergt", "zusammengeführt", "unit"),
    "asc": (
        "ascending",
        "oldest first",
        "earliest first",
        "smallest first",
        "lowest first",
        "a to z",
        "a-z",
        "croissant",
        "ascendente",
        "aufsteigend",
        "crescente",
        "oplopend",
        "rosnąc",
        "по возрастанию",
        "昇順",
        "升序",
    ),
    "desc": (
        "descending",
        "newest first",
        "latest first",
        "most recent first",
        "recent first",
        "largest first",
        "biggest first",
        "highest first",
        "z to a",
        "décroissant",
        "descendente",
        "absteigend",
        "decrescente",
        "aflopend",
        "malejąc",
        "по убыванию",
        "降順",
        "降序",
        "plus récent",
        "más reciente",
        "neueste",
    ),
    "created": (
        "creation",
        "newest",
        "newly created",
        "recently created",
        "date created",
        "création",
        "creación",
        "erstell",
        "creazione",
        "criação",
    ),
    "updated": (
        "recently updated",
        "last updated",
        "last modified",
        "modified",
        "recently changed",
        "changed",
        "last activity",
        "mis à jour",
        "actualiz",
        "aktualisiert",
        "aggiornat",
        "atualizad",
    ),
    "comments": (
        "most discussed",
        "most commented",
        "discussion",
        "commentaires",
        "comentarios",
        "kommentare",
        "commenti",
    ),
    "stars": ("starred", "popular", "popularity", "most stars", "étoiles", "estrellas", "sterne", "stelle"),
    "forks": ("forked", "most forks"),
    "best_match": ("relevance", "most relevant", "best match", "pertinence", "relevancia", "relevanz"),
    "high": ("urgent", "important", "critical", "top priority", "haute", "alta", "hoch", "dringend", "élevée"),
    "low": ("minor", "not urgent", "basse", "baja", "niedrig"),
    "public": ("everyone can see", "visible to everyone", "öffentlich", "público", "pubblico"),
    "private": ("only me", "not public", "hidden", "secret", "privé", "privad", "privat", "privato"),
    "public_and_private": ("public or private",),
    "draft": ("brouillon", "borrador", "entwurf", "bozza", "rascunho", "wip", "work in progress"),
    "approve": ("approv", "lgtm", "looks good", "genehmig", "aprob", "approuv"),
    "request_changes": ("needs changes", "changes requested", "request changes", "demand changes"),
    "comment": ("just comment", "only comment"),
    "squash": ("squash", "single commit", "one commit"),
    "rebase": ("rebase", "linear history"),
    "member": ("members", "membre", "miembro", "mitglied"),
    "admin": ("administrator", "administrateur", "administrador"),
    "not_planned": ("won't do", "wont do", "won't fix", "wontfix", "won't implement", "not planned", "not going to"),
    "completed": ("done", "fixed", "finished", "resolved", "complete"),
    "board": ("kanban", "board view", "columns"),
    "table": ("spreadsheet", "grid", "table view"),
    "roadmap": ("timeline", "gantt"),
    "outside": ("outside collaborator", "not a member", "without being a member", "external", "non-member"),
    "direct": ("directly",),
    "local": ("lokal", "locale", "locaal", "ローカル", "本地"),
    "remote": ("remotely", "entfernt", "distant", "remoto", "リモート", "远程"),
    "bicycling": ("bike", "bicycle", "cycling", "bici", "vélo", "velo", "fahrrad", "bicicleta", "fiets", "rower"),
    "walking": ("walk", "on foot", "à pied", "a pie", "caminando", "zu fuß", "a piedi", "lopen", "pieszo", "徒歩"),
    "driving": (
        "drive",
        "by car",
        "en voiture",
        "en coche",
        "en carro",
        "mit dem auto",
        "in auto",
        "met de auto",
        "autem",
        "車で",
    ),
    "transit": (
        "public transport",
        "by bus",
        "by train",
        "metro",
        "subway",
        "tram",
        "transports en commun",
        "transporte público",
        "öffentlich",
        "öpnv",
        "mezzi pubblici",
        "openbaar vervoer",
        "電車",
    ),
    # GitHub's reactions, by their names in words and their emoji
    "+1": ("thumbs up", "thumbs-up", "thumbsup", "upvote", "👍"),
    "_1": ("thumbs down", "thumbs-down", "thumbsdown", "downvote", "👎"),  # "-1", as _key spells it
    "laugh": ("laughing", "smile", "😄"),
    "heart": ("love", "❤"),
    "hooray": ("tada", "celebrat", "party", "🎉"),
    "rocket": ("🚀",),
    "eyes": ("looking", "👀"),
    "confused": ("😕",),
    "always_invoice": ("invoice immediately", "bill immediately", "right away", "immediately"),
    "none": ("no proration", "don't prorate", "do not prorate", "without proration"),
}

_NORMALISE = re.compile(r"[\s\-]+")


def _key(value: str) -> str:
    return _NORMALISE.sub("_", value.strip().lower())


def stated(value: Any, prop: Mapping[str, Any], name: str, ctx: Context) -> bool:
    if not isinstance(value, str):
        return False
    phrases = SYNONYMS.get(_key(value), ())
    if not phrases:
        # CREATED_AT, updated-at, best-match: the value's first word may be a key ("created")
        head = _key(value).split("_")[0]
        phrases = SYNONYMS.get(head, ()) if head != _key(value) else ()
    low = ctx.text.casefold()
    return any(says(low, p) for p in phrases)
