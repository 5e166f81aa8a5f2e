"""The viewer's pages, one module each beside their templates (``*.html.j2`` in this folder).
Each page is a module-level function reading the :class:`~inquitree.viewer.state.Viewer` from
``request.app.state``; ``viewer/app.py`` assembles them into routes."""
