"""The one exception type for a user's mistakes."""


class AttnvizError(ValueError):
    """A mistake in what the user passed: the message names the shapes involved and the fix."""
