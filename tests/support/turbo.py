"""Start and stop the real Turbo bundler (ArDrive's turbo-upload-service) for the tests.

    with start_turbo(tmp_path / "turbo") as turbo:
        receipt = httpx.post(f"{turbo.url}/v1/tx", content=item_bytes).json()
        bundle = turbo.wait_seeded(item_id)   # the bundle carrying it is posted and seeded
        turbo.arlocal.mine(20)                # then mined, so arlocal unbundles it
        turbo.wait_status(item_id, "FINALIZED")

Installed by `make turbonode` (tools/turbo_node.sh; .testnodes/turbo/service links to the
machine's build under ~/.cache/odfweb3/turbo). Everything runs on 127.0.0.1 in its own temp
directory, on free ports, no Docker, no cloud:

- postgres: a private cluster made with `initdb` (trust auth), run as `nobody` (postgres
  refuses root; CI runs as root); the service's knex migrations run before anything starts;
- redis-server (no persistence);
- moto's server standing in for S3, SQS, DynamoDB, Secrets Manager and SSM, provisioned as
  the service's scripts/provision_localstack.sh provisions LocalStack (bucket, queues with
  their dead-letter queues, tables, secrets);
- arlocal (tests/nodes), the Arweave gateway the bundles go to; the bundler's wallet is minted;
- a payment-service stand-in (ArDrive's payment service is not in the snapshot) answering
  `GET /v1/rates/usd` (the post job asks for a USD/AR rate and retries ~15 s without one)
  and `GET /v1/price/bytes/N` (what odfweb3 asks before it sends: `{"winc": "..."}`, here
  arlocal's own `/price/N` in winston plus the payment service's 23.4 % fee, so the
  number moves with the bytes as the real one does); balances are not checked
  (`SKIP_BALANCE_CHECKS=true`);
- tests/support/chunk_order_proxy.py between the bundler and arlocal: the bundler seeds a
  bundle's chunks many at a time, arlocal reassembles them in arrival order, so the proxy
  passes each transaction's chunks in offset order (a bundle carrying a multipart upload's
  large item is tens of chunks);
- the upload API (`lib/index.js`) and the fulfillment pipeline (`ecs/fulfillment-pipeline/
  dist/app.js`: plan, prepare, post, seed, verify), each through `node --require` of a
  preload that binds every `listen()` to 127.0.0.1 (both call `listen(port)`: all
  interfaces), with short plan/verify intervals.

Every start-up failure names the process, its log and the log tail; everything started is
stopped on exit, failure included (processes also die with the test process:
PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tests.support.chunk_order_proxy import chunk_order_proxy
from tests.support.nodes import (
    ArlocalNode,
    NodeProcess,
    NodeStartError,
    free_port,
    start_arlocal,
)

__all__ = ["TURBO_DIR", "TurboNode", "start_turbo"]

ROOT = Path(__file__).resolve().parents[2]
TURBO_DIR = ROOT / ".testnodes" / "turbo" / "service"
STAMP = ROOT / ".testnodes" / "turbo" / "stamp"

READY_TIMEOUT = 240.0  # node start-up on a loaded 2-core machine
# Receipt to seeded bundle: a few seconds idle, but the pipeline is five node.js jobs polling
# through moto's SQS and postgres, and at load 20-30 on 2 cores it once took over 300 s. Well
# inside the suite's per-test timeout (pyproject: 900 s).
SEED_TIMEOUT = 600.0
NOBODY = (65534, 65534)
REGION = "us-east-1"
BUCKET = "raw-data-items"
# scripts/provision_localstack.sh: name, max receives, visibility timeout, delay, retention.
# The script delays the prepare, post and seed queues 3 s each: a plan's message is sent once
# its rows are written to the writer database and read back through the reader endpoint
# (DB_READER_ENDPOINT), which in a deployment is a replica that lags. Here the reader is the one
# local postgres, so there is no lag to wait out, and the three delays were 9 s of every bundle's
# way from plan to seeded (every Turbo test waits for one or two): none here.
QUEUES = (
    ("finalize-multipart-queue", 3, 30, 0, None),
    ("batch-insert-new-data-items-queue", 3, 60, 0, 3600),
    ("bdi-unbundle-queue", 2, 315, 0, None),
    ("prepare-bundle-queue", 4, 315, 0, None),
    ("post-bundle-queue", 4, 315, 0, None),
    ("seed-bundle-queue", 4, 315, 0, None),
    ("optical-post-queue", 1, 45, 0, 600),
    ("put-offsets-queue", 4, 300, 0, None),
)
QUEUE_ENV = {
    "SQS_FINALIZE_UPLOAD_URL": "finalize-multipart-queue",
    "SQS_NEW_DATA_ITEM_URL": "batch-insert-new-data-items-queue",
    "SQS_UNBUNDLE_BDI_URL": "bdi-unbundle-queue",
    "SQS_PREPARE_BUNDLE_URL": "prepare-bundle-queue",
    "SQS_POST_BUNDLE_URL": "post-bundle-queue",
    "SQS_SEED_BUNDLE_URL": "seed-bundle-queue",
    "SQS_OPTICAL_URL": "optical-post-queue",
    "SQS_PUT_OFFSETS_URL": "put-offsets-queue",
}
# An EVM key the service signs unsigned uploads with (a test value from its .env.localstack).
EVM_KEY = "0x7a875163fd888c21b06db037b3f8c071cc886648d5663aacf188b0a876edc3b9"

# Both services call listen(port) (all interfaces): bind them to loopback instead.
BIND_PRELOAD = """\
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\\d+$/.test(args[0]))) {
    const port = +args[0];
    const rest = args.slice(1).filter((a) => typeof a === "function");
    return listen.call(this, { port, host: "127.0.0.1" }, ...rest);
  }
  if (args[0] && typeof args[0] === "object" && !args[0].path) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
"""


def _require_installed() -> None:
    if not (STAMP.is_file() and (TURBO_DIR / "lib" / "index.js").is_file()):
        raise NodeStartError(
            f"the Turbo bundler is not installed in {TURBO_DIR}: run `make turbonode` "
            "(tools/turbo_node.sh) first"
        )


def _pg_bin(name: str) -> str:
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    if not found:
        raise NodeStartError(f"postgres {name} not found: run `make turbonode` (apt postgresql)")
    return str(found[-1])


def _wait(proc: NodeProcess, url: str, what: str, timeout: float = READY_TIMEOUT) -> None:
    def probe() -> bool:
        try:
            return httpx.get(url, timeout=5.0).status_code == 200
        except httpx.HTTPError:
            return False

    proc.wait_until(probe, timeout, what)


class _Rates(BaseHTTPRequestHandler):
    """The payment service's `GET /v1/rates/usd` and `GET /v1/price/bytes/N`, nothing else
    (balances are not checked)."""

    arlocal_url = ""  # set when arlocal runs: the byte price is arlocal's, plus the fee

    def do_GET(self) -> None:
        status, body = 404, b"{}"
        if self.path.startswith("/v1/rates/"):
            status, body = 200, b'{"rate": 10}'
        elif self.path.startswith("/v1/price/bytes/"):
            n = self.path.rsplit("/", 1)[1]
            if n.isdigit():
                winston = int(httpx.get(f"{self.arlocal_url}/price/{n}", timeout=30.0).text)
                winc = winston * 1234 // 1000  # the payment service's turbo fee: 23.4 %
                status, body = 200, json.dumps({"winc": str(winc), "adjustments": []}).encode()
            else:
                status = 400
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class TurboNode:
    """A running Turbo bundler: the upload API at `url`, bundling into `arlocal`."""

    url: str
    arlocal: ArlocalNode
    address: str  # the bundler's Arweave address (signs receipts and bundles)
    payment_url: str  # the payment-service stand-in (GET /v1/price/bytes/N)
    psql: list[str]  # argv prefix running SQL on the service's database
    logs: dict[str, Path]

    def query(self, sql: str) -> list[list[str]]:
        """Rows of `sql` on the service's database (test inspection only)."""
        out = subprocess.run(
            [*self.psql, "-At", "-F", "\t", "-c", sql],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def status(self, item_id: str) -> dict[str, Any]:
        """`GET /v1/tx/{id}/status` ({} while unknown)."""
        r = httpx.get(f"{self.url}/v1/tx/{item_id}/status", timeout=30.0)
        if r.status_code == 404:
            return {}
        r.raise_for_status()
        doc: dict[str, Any] = r.json()
        return doc

    def stage_of(self, item_id: str) -> str:
        """Where `item_id` is in the fulfillment pipeline, for a failure message: the tables
        holding it (new, planned, permanent, failed) and its plan's bundle tables."""
        held = []
        for table in ("new_data_item", "planned_data_item", "permanent_data_items"):
            if self.query(f"select 1 from {table} where data_item_id = '{item_id}'"):
                held.append(table)
        if self.query(f"select 1 from failed_data_item where data_item_id = '{item_id}'"):
            held.append("failed_data_item")
        plans = self.query(
            f"select plan_id from planned_data_item where data_item_id = '{item_id}' "
            f"union select plan_id from permanent_data_items where data_item_id = '{item_id}'"
        )
        for (plan,) in plans:
            for table in ("bundle_plan", "new_bundle", "posted_bundle", "seeded_bundle"):
                if self.query(f"select 1 from {table} where plan_id = '{plan}'"):
                    held.append(f"{table}({plan})")
            if self.query(f"select 1 from failed_bundle where plan_id = '{plan}'"):
                held.append(f"failed_bundle({plan})")
        return ", ".join(held) or "in no table"

    def wait_seeded(self, item_id: str, timeout: float = SEED_TIMEOUT) -> str:
        """The bundle carrying `item_id` once the bundler posted it and seeded its chunks to
        arlocal (mine only after that: arlocal unbundles on /mine from the chunks it has).
        A bundle another test's mining made permanent already has left seeded_bundle for
        permanent_bundle: found there too."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.query(
                "select s.bundle_id from seeded_bundle s join planned_data_item p "
                f"on p.plan_id = s.plan_id where p.data_item_id = '{item_id}' "
                "union select s.bundle_id from seeded_bundle s join permanent_data_items p "
                f"on p.plan_id = s.plan_id where p.data_item_id = '{item_id}' "
                "union select b.bundle_id from permanent_bundle b join permanent_data_items p "
                f"on p.plan_id = b.plan_id where p.data_item_id = '{item_id}'"
            )
            if rows:
                return rows[0][0]
            time.sleep(0.25)  # one psql look: a few ms; the seed job moves in well under 1 s
        raise TimeoutError(
            f"item {item_id} not in a seeded bundle after {timeout:.0f} s (it is in: "
            f"{self.stage_of(item_id)}); logs: {self.logs}"
        )

    def wait_status(self, item_id: str, want: str, timeout: float = 300.0) -> dict[str, Any]:
        """Poll the status until it is `want`; mine a block between looks (verify counts
        confirmations)."""
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            last = self.status(item_id)
            if last.get("status") == want:
                return last
            self.arlocal.mine(1)
            time.sleep(0.5)  # the verify job runs every 0.5 s (VERIFY_BUNDLE_INTERVAL_MS)
        raise TimeoutError(
            f"item {item_id} status {last} after {timeout:.0f} s, not {want}; logs: {self.logs}"
        )


def _provision(moto_url: str, wallet_jwk: str) -> dict[str, str]:
    """What scripts/provision_localstack.sh creates; the queue URLs by env name."""
    import boto3  # moto[server] brings it

    kw: dict[str, Any] = {
        "endpoint_url": moto_url,
        "region_name": REGION,
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
    }
    boto3.client("s3", **kw).create_bucket(Bucket=BUCKET)
    sqs = boto3.client("sqs", **kw)
    urls: dict[str, str] = {}
    for name, receives, visibility, delay, retention in QUEUES:
        dlq = sqs.create_queue(
            QueueName=f"{name}-dlq", Attributes={"MessageRetentionPeriod": "1209600"}
        )["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        attributes = {
            "VisibilityTimeout": str(visibility),
            "DelaySeconds": str(delay),
            "RedrivePolicy": json.dumps(
                {"maxReceiveCount": str(receives), "deadLetterTargetArn": dlq_arn}
            ),
        }
        if retention is not None:
            attributes["MessageRetentionPeriod"] = str(retention)
        urls[name] = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    ddb = boto3.client("dynamodb", **kw)
    for table in ("upload-service-cache-local", "upload-service-offsets-local"):
        ddb.create_table(
            TableName=table,
            AttributeDefinitions=[{"AttributeName": "Id", "AttributeType": "B"}],
            KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
            ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
        )
        ddb.update_time_to_live(
            TableName=table,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": "X"},
        )
    secrets = boto3.client("secretsmanager", **kw)
    for name, value in (
        ("arweave-wallet", wallet_jwk),
        ("turbo-evm-data-item-signing-key", EVM_KEY),
        ("turbo-optical-key-local", wallet_jwk),
    ):
        secrets.create_secret(Name=name, SecretString=value)
    return {env: urls[name] for env, name in QUEUE_ENV.items()}


@contextlib.contextmanager
def _postgres(work: Path, stack: contextlib.ExitStack) -> Iterator[tuple[int, list[str]]]:
    # Its own folder outside pytest's (mode 0700, root's): nobody must reach it.
    pgroot = Path(tempfile.mkdtemp(prefix="odfweb3-pg-"))
    stack.callback(shutil.rmtree, pgroot, True)
    os.chmod(pgroot, 0o700)
    user = NOBODY if os.getuid() == 0 else None
    if user is not None:
        os.chown(pgroot, *user)
    data = pgroot / "data"
    log = work / "postgres.log"
    init = NodeProcess(
        "initdb",
        [_pg_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        log,
        user=user,
    )
    init.start()
    assert init.proc is not None
    if init.proc.wait(timeout=READY_TIMEOUT) != 0:
        raise init.failure("initdb failed")
    port = free_port()
    pg = NodeProcess(
        "postgres",
        [
            _pg_bin("postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-h",
            "127.0.0.1",
            "-k",
            str(pgroot),
            "-c",
            "fsync=off",
            "-c",
            "max_connections=200",
        ],
        log,
        user=user,
    )
    pg.start()
    stack.callback(pg.stop)
    psql = [_pg_bin("psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "postgres"]

    def ready() -> bool:
        return (
            subprocess.run([*psql, "-c", "select 1"], capture_output=True, timeout=30).returncode
            == 0
        )

    pg.wait_until(ready, READY_TIMEOUT, "select 1")
    yield port, psql


@contextlib.contextmanager
def start_turbo(work: Path) -> Iterator[TurboNode]:
    """Start the whole bundler under `work` (see the module docstring); stop it on exit."""
    _require_installed()
    from odfweb3_arweave.wallet import generate_wallet

    work.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        pg_port, psql = stack.enter_context(_postgres(work, stack))

        redis_port = free_port()
        redis = NodeProcess(
            "redis",
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(work),
            ],
            work / "redis.log",
        )
        redis.start()
        stack.callback(redis.stop)

        moto_port = free_port()
        moto_bin = Path(os.sys.executable).parent / "moto_server"  # type: ignore[attr-defined]
        moto = NodeProcess(
            "moto", [str(moto_bin), "-H", "127.0.0.1", "-p", str(moto_port)], work / "moto.log"
        )
        moto.start()
        stack.callback(moto.stop)
        moto_url = f"http://127.0.0.1:{moto_port}"

        arlocal = stack.enter_context(start_arlocal(work / "arlocal"))
        # The bundler seeds a bundle's chunks many at a time; arlocal reassembles them in
        # arrival order (a real node places them by offset): the proxy passes them in order.
        ordered = stack.enter_context(chunk_order_proxy(arlocal.url))

        _Rates.arlocal_url = arlocal.url
        rates = ThreadingHTTPServer(("127.0.0.1", 0), _Rates)
        threading.Thread(target=rates.serve_forever, daemon=True).start()
        stack.callback(rates.server_close)
        stack.callback(rates.shutdown)

        _wait(moto, f"{moto_url}/moto-api/", "moto GET /moto-api/")
        wallet = generate_wallet()
        jwk_path = work / "turbo-wallet.json"
        jwk_path.write_text(json.dumps(wallet.to_jwk()))
        jwk_path.chmod(0o600)
        queues = _provision(moto_url, jwk_path.read_text())
        arlocal.mint(wallet.address, 10**15)

        preload = work / "bind-loopback.cjs"
        preload.write_text(BIND_PRELOAD)
        port = free_port()
        fulfillment_port = free_port()
        env = {
            "NODE_ENV": "local",
            "LOG_LEVEL": "debug",
            "DB_HOST": "127.0.0.1",
            "DB_PORT": str(pg_port),
            "DB_USER": "postgres",
            "DB_PASSWORD": "postgres",
            "POSTGRES_VERSION": "15",
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            # Most clients read AWS_ENDPOINT; src/jobs/putOffsets.ts reads AWS_ENDPOINT_URL.
            "AWS_ENDPOINT": moto_url,
            "AWS_ENDPOINT_URL": moto_url,
            "S3_FORCE_PATH_STYLE": "true",
            "DATA_ITEM_BUCKET": BUCKET,
            "DATA_ITEM_BUCKET_REGION": REGION,
            "ELASTICACHE_HOST": "127.0.0.1",
            "ELASTICACHE_PORT": str(redis_port),
            "ELASTICACHE_NO_CLUSTERING": "true",
            **queues,
            "ARWEAVE_GATEWAY": ordered.url,
            "PUBLIC_ACCESS_GATEWAY": ordered.url,
            "TURBO_JWK_FILE": str(jwk_path),
            "PAYMENT_SERVICE_BASE_URL": f"127.0.0.1:{rates.server_address[1]}",
            "PAYMENT_SERVICE_PROTOCOL": "http",
            "SKIP_BALANCE_CHECKS": "true",
            "OPTICAL_BRIDGING_ENABLED": "false",
            "PLAN_BUNDLE_ENABLED": "true",
            "VERIFY_BUNDLE_ENABLED": "true",
            "PLAN_BUNDLE_INTERVAL_MS": "1000",
            # The verify job makes a mined bundle's items FINALIZED; every test that settles
            # an item waits for its next run.
            "VERIFY_BUNDLE_INTERVAL_MS": "500",
            "OVERDUE_DATA_ITEM_THRESHOLD_MS": "0",
            "NEW_DATA_ITEM_BATCH_WAIT_TIME_MS": "200",
            "X402_BASE_ADDRESS": "0x1234123412341234123412341234123412341234",
            "TURBO_EVM_DATA_ITEM_SIGNING_KEY": EVM_KEY,
            "MIGRATE_ON_STARTUP": "false",
        }
        node = shutil.which("node") or "node"
        migrate = NodeProcess(
            "knex migrate",
            [
                node,
                str(TURBO_DIR / "node_modules" / "knex" / "bin" / "cli.js"),
                "migrate:latest",
                "--knexfile",
                str(TURBO_DIR / "lib" / "arch" / "db" / "knexfile.js"),
            ],
            work / "migrate.log",
            env=env,
            cwd=TURBO_DIR,
        )
        migrate.start()
        assert migrate.proc is not None
        if migrate.proc.wait(timeout=READY_TIMEOUT) != 0:
            raise migrate.failure("the service's migrations failed")

        upload = NodeProcess(
            "turbo upload service",
            [node, "--require", str(preload), str(TURBO_DIR / "lib" / "index.js")],
            work / "upload-service.log",
            env={**env, "PORT": str(port)},
            cwd=TURBO_DIR,
        )
        fulfillment = NodeProcess(
            "turbo fulfillment pipeline",
            [
                node,
                "--require",
                str(preload),
                str(TURBO_DIR / "ecs" / "fulfillment-pipeline" / "dist" / "app.js"),
            ],
            work / "fulfillment.log",
            env={**env, "PORT": str(fulfillment_port), "FULFILLMENT_PORT": str(fulfillment_port)},
            cwd=TURBO_DIR,
        )
        for proc in (upload, fulfillment):
            proc.start()
            stack.callback(proc.stop)
        url = f"http://127.0.0.1:{port}"
        _wait(upload, f"{url}/v1/info", "GET /v1/info")
        _wait(fulfillment, f"http://127.0.0.1:{fulfillment_port}/health", "GET /health")
        yield TurboNode(
            url=url,
            arlocal=arlocal,
            address=wallet.address,
            payment_url=f"http://127.0.0.1:{rates.server_address[1]}",
            psql=psql,
            logs={p.name: p.log_path for p in (upload, fulfillment, redis, moto, migrate)},
        )
