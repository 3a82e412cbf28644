"""Platform adapters: translators between chat platforms and genbot's event model."""


class AdapterStartError(Exception):
    """An adapter could not start for a reason the operator must fix (a refused token, a
    missing intent, an unreachable endpoint). ``str(error)`` is one line fit to show as is."""


__all__ = ["AdapterStartError"]
