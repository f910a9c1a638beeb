"""/v1/metrics: batches of per-executor samples that Storm workers ship, appended to the records store."""
from __future__ import annotations

import logging
import time

import anyio
from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from planner.records_store import TOPOLOGY_NAME, BatchRefused, MetricsBatch, RecordsStore, batch_topology
from planner.service.deps import get_records_store, get_settings
from planner.service.errors import ErrorBody, ServiceError
from planner.service.guards import GRANT_STATE
from planner.service.json_body import StrictJSONRoute
from planner.service.scopes import Grant, records_token
from planner.service.settings import ServiceSettings

log = logging.getLogger("hetsched.service")

router = APIRouter(prefix="/v1/metrics", tags=["metrics"], route_class=StrictJSONRoute)


class BatchAccepted(BaseModel):
    batch_id: str
    records: int = Field(description="Records in the batch.")
    duplicate: bool = Field(description="True when this batch id was already stored: nothing was written this time.")
    path: str = Field(description="The batch's file, relative to the records store.")


class WorkerSummary(BaseModel):
    worker: str = Field(description="host:port:pid of the worker process.")
    topology_id: str
    batches: int
    records: int
    duplicates: int
    dropped: int = Field(description="Records the worker's buffer dropped so far, as it last said.")
    last_batch_age_s: float


class StoreSummary(BaseModel):
    bytes: int = Field(description="What the store's batch files hold now, bytes (0 until the first batch since the start).")
    max_bytes: int | None = Field(description="The store's size limit (--records-max-mb); null: none.")
    keep_days: float | None = Field(description="Batches older than this are deleted (--records-keep-days); null: kept.")
    dropped_batches: int = Field(description="Stored batches deleted since the start, oldest first, to stay within the limits.")
    dropped_records: int


class MetricsSummary(BaseModel):
    records_dir: str
    batches: int = Field(description="Batches stored since the service started.")
    records: int
    duplicates: int = Field(description="Retried batches answered as duplicates (not stored again).")
    dropped: int = Field(description="Records dropped by the workers' buffers, summed over the workers' last word.")
    store: StoreSummary
    workers: list[WorkerSummary]


class RecordsTokenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    topology: str = Field(min_length=1, max_length=200, description="The topology's name (topology.name).")


class RecordsToken(BaseModel):
    topology: str
    token: str = Field(description="May post this topology's records (POST /v1/metrics/batches) and nothing else.")


@router.post("/batches", response_model=BatchAccepted, responses={
    413: {"model": ErrorBody, "description": "The batch is over the records size limit."},
})
async def post_batch(request: Request, batch: MetricsBatch, settings: ServiceSettings = Depends(get_settings),
                     store: RecordsStore = Depends(get_records_store)) -> BatchAccepted:
    """Append a worker's batch to the records store, once: a batch id already stored answers ``duplicate: true``."""
    size = len(await request.body())
    if size > settings.max_batch_bytes:
        raise ServiceError(413, "body_too_large", f"the metrics batch ({size:,} bytes) is over this planner's limit of "
                           f"{settings.max_batch_bytes:,} bytes per batch; send fewer records per batch")
    grant: Grant | None = getattr(request.state, GRANT_STATE, None)
    if grant is not None and grant.topology is not None:
        try:
            topology = batch_topology(batch)
        except BatchRefused as exc:
            raise ServiceError(422, "invalid_request", str(exc)) from None
        if topology != grant.topology:
            raise ServiceError(403, "forbidden", f"this token may post the records of topology '{grant.topology}' "
                               f"only, not of '{topology}'")
    try:
        stored = await anyio.to_thread.run_sync(store.append, batch)
    except BatchRefused as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None
    except OSError as exc:
        raise ServiceError(503, "storage", f"the records store {store.root} cannot be written: {exc.strerror or exc}") from None
    if stored.duplicate:
        log.info("metrics batch %s from %s:%d is a duplicate, not stored again", stored.batch_id, batch.worker.host, batch.worker.port)
    return BatchAccepted(batch_id=stored.batch_id, records=stored.records, duplicate=stored.duplicate,
                         path=str(stored.path.relative_to(store.root)))


@router.get("/summary", response_model=MetricsSummary)
def summary(store: RecordsStore = Depends(get_records_store)) -> MetricsSummary:
    """What the workers sent since the service started: batches, duplicates and each worker's dropped records."""
    now = time.time()
    tally = store.tally
    workers = [WorkerSummary(worker=key, topology_id=w.topology_id, batches=w.batches, records=w.records,
                             duplicates=w.duplicates, dropped=w.dropped, last_batch_age_s=round(now - w.last_batch_at, 1))
               for key, w in sorted(tally.workers.items())]
    limits = store.limits
    return MetricsSummary(records_dir=str(store.root), batches=tally.batches, records=tally.records,
                          duplicates=tally.duplicates, dropped=sum(w.dropped for w in workers),
                          store=StoreSummary(bytes=tally.bytes, max_bytes=limits.max_bytes, keep_days=limits.keep_days,
                                             dropped_batches=tally.dropped_batches, dropped_records=tally.dropped_records),
                          workers=workers)


@router.post("/tokens", response_model=RecordsToken, responses={
    403: {"model": ErrorBody, "description": "The caller's token lacks the records scope."},
})
def records_token_of(request: Request, body: RecordsTokenRequest) -> RecordsToken:
    """The records token of one topology, for its workers (``hetsched submit`` puts it in the topology's conf).

    It may post that topology's records and nothing else; the same topology always gets the same token, until the
    service's records secret (``records-secret`` beside its database) is replaced.
    """
    if not TOPOLOGY_NAME.match(body.topology):
        raise ServiceError(422, "invalid_request", f"topology name '{body.topology}' cannot name a folder of the records "
                           "store: use letters, digits, '_' and '-'")
    return RecordsToken(topology=body.topology, token=records_token(request.app.state.records_secret(), body.topology))
