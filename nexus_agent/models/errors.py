"""The model store's one error type."""


class ModelError(RuntimeError):
    """A model could not be fetched, assembled or verified. The message names the package or file."""
