"""/v1/metrics: batches of per-executor samples that Storm workers ship, appended to the records store."""
from __future__ import annotations

import logging
import time

import anyio
from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from planner.records_store import BatchRefused, MetricsBatch, RecordsStore
from planner.service.deps import get_records_store, get_settings
from planner.service.errors import ErrorBody, ServiceError
from planner.service.json_body import StrictJSONRoute
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


class MetricsSummary(BaseModel):
    records_dir: str
    batches: int = Field(description="Batches stored since the service started.")
    records: int
    duplicates: int = Field(description="Retried batches answered as duplicates (not stored again).")
    dropped: int = Field(description="Records dropped by the workers' buffers, summed over the workers' last word.")
    workers: list[WorkerSummary]


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
    return MetricsSummary(records_dir=str(store.root), batches=tally.batches, records=tally.records,
                          duplicates=tally.duplicates, dropped=sum(w.dropped for w in workers), workers=workers)
