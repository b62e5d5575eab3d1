"""The library behind the CLI (docs/api.md): each command a function taking typed options and
returning a frozen report; progress, messages and questions passed in as :class:`Hooks`.

The curated names are re-exported, lazily, by :mod:`odfweb3` itself.
"""
