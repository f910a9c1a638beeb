"""The planning service: the planner core over HTTP (the contract is docs/reference/api.md; operators read docs/operations/planner.md).

The only part of ``planner`` that knows about HTTP. Build the app with
:func:`planner.service.app.create_app`; ``hetsched serve`` runs it under uvicorn.
"""
