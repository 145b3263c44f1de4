#!/usr/bin/env python3
"""Writes the hand-written first-day sessions (fd-16 ...) as Claude Code JSONL transcripts.

Each session is a short, ordinary piece of developer work in its own project (cwd
/home/dev/<project>). Lines have the shape of a real Claude Code session's user and
assistant lines (type, uuid, parentUuid, sessionId, timestamp, cwd, version, gitBranch,
message{role, content}); an assistant turn that calls a tool is split into one line per
content block, as Claude Code does, followed by a user line with the tool_result.

Deterministic: uuids come from random.Random(seed) so re-running gives the same files.
Usage: python3 make_sessions.py   (writes <sessionId>.jsonl next to this script and
prints, for each session, its file and the uuids of the lines marked as evidence).
"""
import datetime
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = "2.1.41"
MODEL = "claude-opus-4-6"

SESSIONS = []


def S(key, cwd, branch, start, msgs):
    SESSIONS.append(dict(key=key, cwd=cwd, branch=branch, start=start, msgs=msgs))


def U(text, ev=False):
    return dict(role="user", text=text, ev=ev)


def A(text, ev=False):
    return dict(role="assistant", text=text, ev=ev)


def T(text, name, inp, result, ev=False):
    """assistant text + tool_use (same API message), then the tool_result user line."""
    return dict(role="tool", text=text, name=name, input=inp, result=result, ev=ev)


# --------------------------------------------------------------------------------------
# k8s: liveness probe kills a slow-booting Spring Boot app -> startupProbe (2 messages)
S("k8s-startup", "/home/dev/billing-api", "main", "2026-11-02T09:14:03",
  [U("""our billing-api pods keep getting restarted right after every deploy. kubectl describe pod shows

  Warning  Unhealthy  Liveness probe failed: HTTP probe failed with statuscode: 503
  Normal   Killing    Container billing-api failed liveness probe, will be restarted

it's a spring boot app and it needs around 90 seconds before the health endpoint says UP. this is what we have in the deployment:

        livenessProbe:
          httpGet:
            path: /actuator/health
            port: 8080
          initialDelaySeconds: 20
          periodSeconds: 10
          failureThreshold: 3

RESTARTS column is at 4-5 for every new pod before one finally makes it. what's the right fix here?"""),
   A("""The liveness probe is doing exactly what it's configured to do: it starts checking 20s after the container starts, and after 3 failures 10s apart (so at ~50s) the kubelet kills the container. Your app needs ~90s, so every attempt is killed before it finishes booting, and a pod only survives when a boot happens to be a bit faster (JIT, cache, node load).

Don't fix this by cranking `initialDelaySeconds` up to 120: that also delays detection of a real hang for every pod, and the boot time will drift as the app grows.

Use a **startupProbe**. While it is running, liveness and readiness probes are disabled; once it succeeds once, the liveness probe takes over with its normal, tight settings:

```yaml
        startupProbe:
          httpGet:
            path: /actuator/health/liveness
            port: 8080
          periodSeconds: 5
          failureThreshold: 36      # 36 x 5s = up to 180s allowed for boot
        livenessProbe:
          httpGet:
            path: /actuator/health/liveness
            port: 8080
          periodSeconds: 10
          failureThreshold: 3
        readinessProbe:
          httpGet:
            path: /actuator/health/readiness
            port: 8080
          periodSeconds: 5
          failureThreshold: 3
```

Notes:
- `initialDelaySeconds` is gone from the liveness probe; the startup probe covers boot.
- Spring Boot exposes separate `liveness` and `readiness` groups (`management.endpoint.health.probes.enabled=true`, on by default when it detects Kubernetes). Point liveness at `/liveness` so a down database makes the pod *unready* (taken out of the Service) instead of *restarted* - restarting doesn't fix a database outage and can cascade.
- 180s gives you 2x headroom over today's ~90s; if boot keeps growing, look at that separately (lazy init, fewer eager beans).

After applying, `kubectl rollout status deploy/billing-api` should finish with RESTARTS staying at 0.""", ev=True)])

# --------------------------------------------------------------------------------------
# Postgres: add a required column to a 40M-row table without long locks (6 messages)
S("pg-backfill", "/home/dev/storefront", "feature/fulfillment-status", "2026-11-03T14:02:41",
  [U("""I need to add a fulfillment_status column to orders. it has to be NOT NULL, and for existing rows it's derived: 'shipped' if shipped_at is not null, 'cancelled' if cancelled_at is not null, else 'pending'. orders is ~40M rows on Postgres 14. last time someone ran a plain ALTER TABLE on orders the checkout hung for several minutes. we use alembic, can you write the migration so that doesn't happen again?"""),
   A("""A single `ALTER TABLE orders ADD COLUMN ... NOT NULL` with a computed value would need a full-table rewrite under an ACCESS EXCLUSIVE lock - that's what froze checkout last time. Splitting it into steps keeps every lock short:

1. **Add the column nullable, with a default for new rows.** On PG 11+ adding a column with a constant default is a catalog-only change, instant even on 40M rows.
2. **Backfill in batches** by primary key range, each batch its own transaction, so no long-running transaction and no huge WAL spike.
3. **Add a `CHECK (fulfillment_status IS NOT NULL) NOT VALID`** constraint (instant), then **`VALIDATE CONSTRAINT`** - validation scans the table but only takes a SHARE UPDATE EXCLUSIVE lock, so reads and writes continue.
4. **`SET NOT NULL`** - since PG 12, if a valid check constraint already proves no NULLs, Postgres skips the scan. Then drop the helper constraint.

Three revisions, because the backfill must not run inside alembic's single migration transaction:

```python
# 0041_add_fulfillment_status.py
def upgrade():
    op.execute("SET lock_timeout = '5s'")
    op.add_column("orders", sa.Column("fulfillment_status", sa.Text(), server_default="pending", nullable=True))

# 0042_backfill_fulfillment_status.py
def upgrade():
    conn = op.get_bind()
    max_id = conn.execute(sa.text("SELECT max(id) FROM orders")).scalar() or 0
    step = 10_000
    with op.get_context().autocommit_block():
        for lo in range(0, max_id + 1, step):
            conn.execute(sa.text(\"\"\"
                UPDATE orders SET fulfillment_status = CASE
                    WHEN shipped_at IS NOT NULL THEN 'shipped'
                    WHEN cancelled_at IS NOT NULL THEN 'cancelled'
                    ELSE 'pending' END
                WHERE id >= :lo AND id < :hi
            \"\"\"), {"lo": lo, "hi": lo + step})

# 0043_fulfillment_status_not_null.py
def upgrade():
    op.execute("SET lock_timeout = '5s'")
    op.execute("ALTER TABLE orders ADD CONSTRAINT orders_fulfillment_status_nn CHECK (fulfillment_status IS NOT NULL) NOT VALID")
    op.execute("ALTER TABLE orders VALIDATE CONSTRAINT orders_fulfillment_status_nn")
    op.execute("ALTER TABLE orders ALTER COLUMN fulfillment_status SET NOT NULL")
    op.execute("ALTER TABLE orders DROP CONSTRAINT orders_fulfillment_status_nn")
```

The application should start writing `fulfillment_status` on every status change *before* 0042 runs, otherwise rows updated during the backfill can end up with a stale value.""", ev=True),
   U("why the lock_timeout? the add column is instant anyway"),
   A("""The ALTER itself is instant, but it still has to *acquire* an ACCESS EXCLUSIVE lock first. If some transaction is holding even a weak lock on `orders` (a long report query, an idle-in-transaction connection from a worker), the ALTER waits in the lock queue - and every query that arrives after it queues up **behind the ALTER**, including plain SELECTs from checkout. That's the usual way an "instant" migration takes a site down.

With `lock_timeout = '5s'` the ALTER gives up after 5 seconds instead of building that queue; the migration fails cleanly and you just rerun it a bit later. Worth checking `pg_stat_activity` for `idle in transaction` sessions before running it in prod.""", ev=True),
   U("ran all three on staging (same size as prod). backfill took 11 minutes, checkout latency graph didn't move. 👍"),
   A("""Good result. For prod I'd run 0041 and 0043 in a quiet hour (they're short but they need the lock), and 0042 whenever - it's just many small transactions. If the backfill causes replication lag on the replica, add a short `time.sleep(0.05)` between batches.""")])

# --------------------------------------------------------------------------------------
# React: interval callback closes over the initial state value (2 messages)
S("react-interval", "/home/dev/pomodoro-web", "main", "2026-11-04T20:31:12",
  [U("""my countdown component goes 25:00 -> 24:59 and then just stays at 24:59 forever. no errors in the console.

```jsx
const [secondsLeft, setSecondsLeft] = useState(25 * 60);

useEffect(() => {
  const id = setInterval(() => {
    setSecondsLeft(secondsLeft - 1);
  }, 1000);
  return () => clearInterval(id);
}, []);
```

what am I doing wrong?"""),
   A("""It's a stale closure. The effect runs once (empty dependency array), so the callback you pass to `setInterval` captures `secondsLeft` from the **first render**, where it is 1500. Every second it calls `setSecondsLeft(1500 - 1)`, i.e. sets 1499 again; React sees the same value and nothing changes after the first update.

Use the functional form of the setter, which always receives the current value:

```jsx
useEffect(() => {
  const id = setInterval(() => {
    setSecondsLeft((s) => {
      if (s <= 1) {
        clearInterval(id);
        return 0;
      }
      return s - 1;
    });
  }, 1000);
  return () => clearInterval(id);
}, []);
```

Why not just add `secondsLeft` to the dependency array? It would "work", but the interval would be torn down and recreated every second, and the countdown drifts because each new interval starts its 1000ms from scratch.

Two smaller things while you're here:
- `setInterval` is not exact, and browsers throttle it in background tabs, so after a few minutes in another tab the display falls behind. If that matters, store the end time (`Date.now() + 25*60*1000`) and compute `secondsLeft` from it on each callback.
- If you later need to read other state inside the callback, keep it in a `useRef` instead of adding it to the dependency list.""", ev=True)])

# --------------------------------------------------------------------------------------
# Flaky CI test: UTC vs runner-local calendar day (4 messages + tool)
S("jest-tz", "/home/dev/invoice-service", "fix/flaky-due-label", "2026-11-05T11:47:30",
  [U("""the CI job fails maybe once or twice a week on

  ● formatDueLabel › says "due tomorrow" for an invoice due in 1 day
    Expected: "due tomorrow"
    Received: "due today"

rerun and it's green. it's getting annoying, can you find out why it's flaky?"""),
   T("Let me look at the formatter and the test.", "Bash",
     {"command": "cat src/format/dueLabel.ts; sed -n 1,20p src/format/dueLabel.test.ts"},
     """export function formatDueLabel(dueDate: Date, now: Date = new Date()): string {
  const day = (d: Date) => d.toISOString().slice(0, 10);
  const diff = (Date.parse(day(dueDate)) - Date.parse(day(now))) / 86_400_000;
  if (diff < 0) return "overdue";
  if (diff === 0) return "due today";
  if (diff === 1) return "due tomorrow";
  return `due in ${diff} days`;
}
import { formatDueLabel } from "./dueLabel";

describe("formatDueLabel", () => {
  it('says "due tomorrow" for an invoice due in 1 day', () => {
    const tomorrow = new Date();
    tomorrow.setDate(tomorrow.getDate() + 1);
    tomorrow.setHours(9, 0, 0, 0);
    expect(formatDueLabel(tomorrow)).toBe("due tomorrow");
  });
});"""),
   A("""Found it. The formatter compares **UTC** calendar days (`toISOString()` is always UTC), but the test builds "tomorrow" in the runner's **local** time:

```ts
const tomorrow = new Date();
tomorrow.setDate(tomorrow.getDate() + 1);
tomorrow.setHours(9, 0, 0, 0);   // 09:00 local
```

Our self-hosted runners are in the office and run with `TZ=America/Los_Angeles`. Between 16:00 and 24:00 Pacific, "now" is already the next day in UTC, while "tomorrow 09:00 Pacific" is 17:00 UTC of that same UTC day - so the difference is 0 days and the label is "due today". The test only fails when the pipeline runs in the evening, Pacific time, which is why it looks random.

Fix, in two parts:

1. The test no longer depends on the clock or the machine's zone: it uses Jest's fake timers with a fixed instant and passes `now` explicitly.
```ts
beforeEach(() => {
  jest.useFakeTimers().setSystemTime(new Date("2026-03-10T23:30:00Z"));
});
afterEach(() => jest.useRealTimers());
```
2. `jest.config.ts` gets a `globalSetup` that sets `process.env.TZ = "UTC"`, so every test file runs in the same zone on laptops and runners.

I also added a test that pins the evening case (`23:30Z` now, due `2026-03-11`) so it can't regress silently.""", ev=True),
   U("but why would invoices be compared in UTC at all, our customers see their own local date"),
   A("""Good point, and that's a product bug separate from the test: a customer in California looking at the page at 18:00 sees "due today" for an invoice due tomorrow in their calendar. The clean fix is to compare calendar days in the **customer's** time zone - we already store `customer.timezone` - with `Intl.DateTimeFormat(..., { timeZone })` or date-fns-tz. That touches the email templates too, so I'd keep it out of this flaky-test PR; I've opened a TODO in `dueLabel.ts` pointing to it.""", ev=False)])

# --------------------------------------------------------------------------------------
# Python packaging: data files missing from the wheel (6 messages)
S("py-package-data", "/home/dev/geotools", "main", "2026-11-06T16:05:55",
  [U("""I published geotools 0.3.0 to our internal index and people are getting this on first use:

FileNotFoundError: [Errno 2] No such file or directory: '/opt/venv/lib/python3.11/site-packages/geotools/data/countries.geojson'

but everything passes locally and in CI. pyproject uses setuptools."""),
   T("Let me look at the packaging config and how the file is opened.", "Bash",
     {"command": "cat pyproject.toml && grep -rn countries.geojson geotools/ && python -m build --wheel -o /tmp/wh >/dev/null && unzip -l /tmp/wh/*.whl | grep -c geojson"},
     """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "geotools"
version = "0.3.0"

[tool.setuptools]
packages = ["geotools"]
geotools/borders.py:9:_PATH = os.path.join(os.path.dirname(__file__), "data", "countries.geojson")
0"""),
   A("""The wheel contains **zero** `.geojson` files. `packages = ["geotools"]` tells setuptools which Python packages to ship, and non-Python files are only included if you declare them as package data (or use a `MANIFEST.in` together with `include-package-data`). Nothing declares `data/*.geojson`, so the wheel has the code but not the data.

It passes locally and in CI because both run from the repository checkout (`pip install -e .` / pytest from the repo root), where `os.path.dirname(__file__)` points into the source tree and the file is right there.

Changes:

```toml
[tool.setuptools]
packages = ["geotools", "geotools.data"]

[tool.setuptools.package-data]
"geotools.data" = ["*.geojson"]
```

and `geotools/data/__init__.py` (empty), and in `borders.py` read it through `importlib.resources`, which also works from zipped installs:

```python
from importlib.resources import files
_raw = files("geotools.data").joinpath("countries.geojson").read_text(encoding="utf-8")
```

After rebuilding, `unzip -l` shows `geotools/data/countries.geojson` (4.1 MB) in the wheel.""", ev=True),
   U("how do we stop this from happening again? CI was green the whole time"),
   A("""Make CI test what users get, not the checkout. I added a `wheel-smoke` job:

```yaml
  wheel-smoke:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with: { python-version: "3.11" }
      - run: python -m pip install build && python -m build --wheel
      - run: |
          python -m venv /tmp/v && /tmp/v/bin/pip install dist/*.whl
          cd /tmp && /tmp/v/bin/python -c "import geotools.borders as b; assert b.country_at(48.85, 2.35) == 'FR'"
```

The `cd /tmp` matters: running from the repo root would put the source tree on `sys.path` and hide the problem again. The publish job now `needs: wheel-smoke`.""", ev=True),
   U("nice. bump to 0.3.1 and I'll publish"),
   A("Bumped `version` to 0.3.1 in pyproject.toml and added a CHANGELOG entry: \"Fix: country borders data was missing from the wheel.\"")])

# --------------------------------------------------------------------------------------
# Rust: E0502 on get-or-insert with an early return (2 messages)
S("rust-e0502", "/home/dev/tilemap-rs", "main", "2026-11-09T10:22:18",
  [U("""can't get this to build:

error[E0502]: cannot borrow `self.cache` as mutable because it is also borrowed as immutable
  --> src/store.rs:31:9
   |
25 |     pub fn tile(&mut self, key: TileKey) -> &Tile {
   |                 - let's call the lifetime of this reference `'1`
26 |         if let Some(t) = self.cache.get(&key) {
   |                          ---------- immutable borrow occurs here
27 |             return t;
   |                    - returning this value requires that `self.cache` is borrowed for `'1`
...
31 |         self.cache.insert(key, t);
   |         ^^^^^^^^^^^^^^^^^^^^^^^^^ mutable borrow occurs here

the code after line 27 only runs when the get returned None, so there's no borrow anymore?? """),
   A("""You're right that it's sound - this is a known limitation of the current borrow checker (NLL "problem case #3": a reference returned conditionally from a function keeps the borrow alive on *all* paths). The next-generation checker (Polonius) accepts it, but stable Rust doesn't yet.

The usual workarounds:

**1. Look up twice** (simplest; the extra hash lookup is cheap):
```rust
pub fn tile(&mut self, key: TileKey) -> &Tile {
    if !self.cache.contains_key(&key) {
        let t = self.load(key);
        self.cache.insert(key, t);
    }
    &self.cache[&key]
}
```

**2. Entry API**, which does one lookup:
```rust
pub fn tile(&mut self, key: TileKey) -> &Tile {
    let source = &self.source;          // borrow only the field load needs
    self.cache.entry(key).or_insert_with(|| load_tile(source, key))
}
```
For this one `load` can't be a `&self` method, because the closure would borrow all of `self` while `self.cache` is mutably borrowed. Making it a free function (or an associated fn) that takes `&TileSource` splits the borrows so the compiler can see they're disjoint.

I'd go with option 2 here since `tile()` is on the hot path of rendering; `load_tile(source: &TileSource, key: TileKey) -> Tile` only needed the source anyway.""", ev=True)])

# --------------------------------------------------------------------------------------
# nginx: 413 on uploads, then 504 for slow big uploads (4 messages)
S("nginx-413", "/home/dev/photo-share", "main", "2026-11-10T13:40:09",
  [U("""image uploads bigger than roughly 1MB fail with "413 Request Entity Too Large". the response is from nginx (it's the html error page with nginx at the bottom), the node app never logs the request. config is in deploy/nginx/site.conf"""),
   A("""nginx's `client_max_body_size` defaults to **1m**, and it rejects larger request bodies itself before proxying - which is why the app never sees them.

In `deploy/nginx/site.conf` I set it for the upload route only, so the rest of the site keeps the small limit:

```nginx
location /api/uploads {
    client_max_body_size 25m;
    proxy_pass http://app_upstream;
}
```

(25m matches the limit the app already enforces in multer, so the two agree.) Apply with `sudo nginx -t && sudo systemctl reload nginx` - `reload` keeps existing connections, no downtime.""", ev=True),
   U("ok 5MB ones work now. but a 20MB one from my phone on hotel wifi ended with 504 Gateway Time-out after about a minute"),
   A("""That's a different limit. By default nginx **buffers the whole request body** before it opens the connection to the app, and `proxy_read_timeout` / `proxy_send_timeout` are 60s. On a slow link the body trickles in, and when the app finally gets it, processing (resizing) plus the previous wait runs past the 60s window - nginx gives up with 504.

For the upload location:

```nginx
location /api/uploads {
    client_max_body_size 25m;
    client_body_timeout 120s;       # max gap between two reads from the client
    proxy_request_buffering off;    # stream the body to the app as it arrives
    proxy_read_timeout 300s;        # wait up to 5 min for the app's response
    proxy_send_timeout 300s;
    proxy_pass http://app_upstream;
}
```

With buffering off, multer receives the stream as it comes in, so the app's own timeouts apply from the first byte. I left the global timeouts alone; only this route gets the long ones. Tested with `curl --limit-rate 200k -F file=@20mb.jpg` - completes in ~100s with a 201.""", ev=True)])

# --------------------------------------------------------------------------------------
# cron: works by hand, not from crontab (PATH, then % escaping) (4 messages)
S("cron-path", "/home/dev/ops-scripts", "main", "2026-11-11T08:12:44",
  [U("""backup.sh works fine when I run it myself but from cron nothing gets created. crontab -l:

0 2 * * * /home/dev/ops-scripts/backup.sh >> /var/log/pg-backup.log 2>&1

and the log has: /home/dev/ops-scripts/backup.sh: line 7: pg_dump: command not found"""),
   A("""cron runs jobs with a minimal environment - `PATH` is just `/usr/bin:/bin`, and none of your shell profile is loaded. `pg_dump` on this box lives in `/usr/lib/postgresql/16/bin`, which your interactive shell gets from `~/.bashrc`.

I made the script independent of the caller's environment instead of patching the crontab:

```bash
#!/usr/bin/env bash
set -euo pipefail
export PATH="/usr/lib/postgresql/16/bin:/usr/local/bin:/usr/bin:/bin"
export PGPASSFILE="$HOME/.pgpass"
```

`PGPASSFILE` is there for the same reason - it worked interactively because `psql` found `~/.pgpass` through `HOME`, and I'd rather not rely on that. Also added `set -euo pipefail` so a failed dump makes the job exit non-zero instead of leaving a 20-byte gzip behind.""", ev=True),
   U("works. but I also changed the crontab to name the file by date and now the file is literally called backup-.sql.gz\n\n0 2 * * * /home/dev/ops-scripts/backup.sh /srv/backups/backup-$(date +%F).sql.gz >> /var/log/pg-backup.log 2>&1"),
   A("""In a crontab line `%` is special: cron turns the first unescaped `%` into a newline and feeds everything after it to the command's stdin. So the command cron actually runs ends at `date +`, which prints nothing useful, and the file name comes out empty in the middle.

Escape it:

```
0 2 * * * /home/dev/ops-scripts/backup.sh /srv/backups/backup-$(date +\\%F).sql.gz >> /var/log/pg-backup.log 2>&1
```

Simpler still is to compute the name inside the script, where `%` is just a character. I changed `backup.sh` to default to `/srv/backups/backup-$(date +%F).sql.gz` when no argument is given, so the crontab line can stay short, and added `find /srv/backups -name 'backup-*.sql.gz' -mtime +14 -delete` at the end to keep two weeks.""", ev=True)])

# --------------------------------------------------------------------------------------
# S3: AccessDenied on PutObject because of SSE-KMS key permissions (6 messages)
S("s3-kms", "/home/dev/receipts-pipeline", "main", "2026-11-12T15:26:51",
  [U("""the receipt-ingest lambda fails with

An error occurred (AccessDenied) when calling the PutObject operation: Access Denied

but its role policy clearly has s3:PutObject on arn:aws:s3:::acme-receipts-prod/*. same code works against the staging bucket. what's different?"""),
   T("Let me compare the two buckets' encryption settings.", "Bash",
     {"command": "aws s3api get-bucket-encryption --bucket acme-receipts-prod; aws s3api get-bucket-encryption --bucket acme-receipts-staging"},
     """{
    "ServerSideEncryptionConfiguration": {
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "arn:aws:kms:eu-west-1:111122223333:key/6f1c2a9e-0d6b-4c4e-9d7a-2b1f0e3c5a77"}, "BucketKeyEnabled": true}]
    }
}
{
    "ServerSideEncryptionConfiguration": {
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}, "BucketKeyEnabled": false}]
    }
}"""),
   A("""That's the difference. The prod bucket encrypts every new object with a **customer-managed KMS key** by default; staging uses S3-managed keys (AES256). With SSE-KMS, S3 calls KMS on the caller's behalf during `PutObject`, and that call runs with the **Lambda role's** permissions. The role has `s3:PutObject` but nothing on the key, so KMS refuses - and S3 reports it as a generic `AccessDenied` on PutObject, which is what makes this confusing.

The role needs `kms:GenerateDataKey` on that key (and `kms:Decrypt` if the function ever reads the objects back or does multipart uploads):

```json
{
  "Effect": "Allow",
  "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
  "Resource": "arn:aws:kms:eu-west-1:111122223333:key/6f1c2a9e-0d6b-4c4e-9d7a-2b1f0e3c5a77"
}
```

I added this to `infra/iam/receipt_ingest.tf`. One more thing to check: the key policy must allow IAM policies to grant access (the default key policy's `arn:aws:iam::111122223333:root` statement does that). If the key was created with a custom policy, the role has to be named in the key policy itself.""", ev=True),
   U("applied. still AccessDenied 😩"),
   T("Let me look at the key policy.", "Bash",
     {"command": "aws kms get-key-policy --key-id 6f1c2a9e-0d6b-4c4e-9d7a-2b1f0e3c5a77 --policy-name default --output text | jq '.Statement[].Principal'"},
     """{
  "AWS": "arn:aws:iam::111122223333:role/receipts-admin"
}
{
  "AWS": "arn:aws:iam::111122223333:role/receipts-export"
}"""),
   A("""As suspected: the key was created with a custom policy that only lists two roles and has **no** root-account statement, so IAM policies alone can never grant access to it - the identity policy we added is ignored. The Lambda role has to appear in the key policy.

I added a statement to the key policy in `infra/kms/receipts_key.tf`:

```json
{
  "Sid": "AllowReceiptIngestUse",
  "Effect": "Allow",
  "Principal": {"AWS": "arn:aws:iam::111122223333:role/receipt-ingest-lambda"},
  "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
  "Resource": "*"
}
```

After `terraform apply`, a test invocation wrote `s3://acme-receipts-prod/2026/11/12/r-88213.json` fine. For the future: when S3 says AccessDenied and the S3 permissions look right, check the bucket's encryption and the KMS key policy first.""", ev=True)])


# --------------------------------------------------------------------------------------
# Node memory leak: a listener per connection on a shared subscriber (8 messages)
S("node-leak", "/home/dev/notify-gateway", "main", "2026-11-13T09:03:27",
  [U("""notify-gateway (the websocket service) grows from ~200MB RSS after start to 1.5GB in about two days and then gets OOMKilled by k8s, then starts over. traffic is pretty flat. where do I even start?"""),
   A("""Steady growth with flat traffic usually means something is retained per connection or per message and never released. Best evidence is two heap snapshots from the same process some time apart, compared:

1. Start the pod with `node --inspect=0.0.0.0:9229` (or send `SIGUSR1` to the running process) and port-forward 9229.
2. In Chrome DevTools > Memory, take a heap snapshot, wait an hour, take another.
3. Select the second one, switch the view to **Comparison**, sort by "Size Delta".

Also worth grepping the logs for `MaxListenersExceededWarning` - it's the most common cause of exactly this pattern in Node services."""),
   U("""you called it, the logs have

(node:1) MaxListenersExceededWarning: Possible EventEmitter memory leak detected. 11 message listeners added to [RedisClient]. Use emitter.setMaxListeners() to increase limit

and in the comparison the biggest delta is (closure) objects, retainer path goes to RedisClient._events.message, thousands of them"""),
   T("That points straight at the subscription code. Let me look at the connection handler.", "Read",
     {"file_path": "/home/dev/notify-gateway/src/connections.js"},
     """wss.on('connection', (ws, req) => {
  const userId = authenticate(req);
  subscriber.subscribe(`user:${userId}`);
  subscriber.on('message', (channel, payload) => {
    if (channel === `user:${userId}`) ws.send(payload);
  });
  ws.on('close', () => {
    subscriber.unsubscribe(`user:${userId}`);
  });
});"""),
   A("""There's the leak. Every websocket connection adds a new `'message'` listener to the **one shared** Redis subscriber, and the `close` handler unsubscribes from the channel but never removes the listener. The closure keeps `ws` (and its buffers) alive after the client is gone, so every reconnect - mobile clients reconnect a lot - leaves one more dead socket reachable. Nothing is ever freed, hence the slow climb.

It's also O(connections) work per message: every published message runs through every listener ever added.

Fix: one listener for the whole process, dispatching through a map of channel -> set of sockets:

```js
const sockets = new Map(); // channel -> Set<WebSocket>

subscriber.on('message', (channel, payload) => {
  for (const ws of sockets.get(channel) ?? []) ws.send(payload);
});

wss.on('connection', (ws, req) => {
  const channel = `user:${authenticate(req)}`;
  if (!sockets.has(channel)) {
    sockets.set(channel, new Set());
    subscriber.subscribe(channel);
  }
  sockets.get(channel).add(ws);
  ws.on('close', () => {
    const set = sockets.get(channel);
    set.delete(ws);
    if (set.size === 0) {
      sockets.delete(channel);
      subscriber.unsubscribe(channel);
    }
  });
});
```

This also fixes a second bug: with two tabs open for the same user, closing one tab unsubscribed the channel and the other tab silently stopped receiving notifications.

I did **not** raise `setMaxListeners` - the warning was right.""", ev=True),
   U("deployed to one pod yesterday as canary. it's sitting at 230MB after 24h, the others are at 900MB"),
   A("""That's the fix confirmed - 230MB flat vs. the usual climb. I'd roll it to the rest. Two follow-ups I'd suggest:

- a test that opens and closes 1000 connections and asserts `subscriber.listenerCount('message') === 1`;
- an alert on `process_resident_memory_bytes` growing for 6h, so the next leak is found before the OOM kill.""", ev=True)])

# --------------------------------------------------------------------------------------
# CORS: preflight only for PUT/JSON (2 messages)
S("flask-cors", "/home/dev/recipes-api", "main", "2026-11-16T19:55:02",
  [U("""frontend on localhost:5173 calls my flask api on localhost:5000. GETs work fine but saving a recipe (PUT with a json body) fails in the browser with

Access to fetch at 'http://localhost:5000/api/recipes/12' from origin 'http://localhost:5173' has been blocked by CORS policy: Response to preflight request doesn't pass access control check: No 'Access-Control-Allow-Origin' header is present on the requested resource.

I already add the header:

@app.after_request
def add_cors(resp):
    if request.method in ("GET", "PUT"):
        resp.headers["Access-Control-Allow-Origin"] = "http://localhost:5173"
    return resp

curl -X PUT works."""),
   A("""The key word is **preflight**. A GET with no custom headers is a "simple" request, so the browser sends it directly and only checks the response header - which you add. A PUT with `Content-Type: application/json` isn't simple, so the browser first sends an **OPTIONS** request asking for permission, and only sends the PUT if that answer allows it.

Your hook only adds the header for GET and PUT, so the OPTIONS response has no `Access-Control-Allow-Origin` - and it also lacks `Access-Control-Allow-Methods` and `Access-Control-Allow-Headers`, which a preflight needs. curl works because curl doesn't do CORS at all; it's purely a browser rule.

Rather than hand-rolling this, use flask-cors, which answers preflights correctly:

```python
from flask_cors import CORS

CORS(
    app,
    resources={r"/api/*": {"origins": ["http://localhost:5173"]}},
    methods=["GET", "POST", "PUT", "DELETE"],
    allow_headers=["Content-Type", "Authorization"],
    max_age=600,   # let the browser cache the preflight for 10 min
)
```

and delete the `after_request` hook so the two don't fight over the headers.

For production, put the real frontend origin in an env var instead of hardcoding localhost - or, if the frontend and API end up on the same domain behind the same proxy, you don't need CORS at all.""", ev=True)])

# --------------------------------------------------------------------------------------
# Docker: layer cache busted by COPY . . before npm ci, then CI cache (4 messages)
S("docker-cache", "/home/dev/dashboard-ui", "chore/faster-builds", "2026-11-17T10:10:36",
  [U("""every docker build does the full npm ci again, ~6 minutes, even when I only touch a css file. Dockerfile:

FROM node:20-alpine AS build
WORKDIR /app
COPY . .
RUN npm ci
RUN npm run build

FROM nginx:1.27-alpine
COPY --from=build /app/dist /usr/share/nginx/html"""),
   A("""Docker caches each instruction, and a `COPY` step's cache key is the checksum of the files it copies. Because `COPY . .` copies the whole project, changing *any* file (your css) invalidates that step, and every step after it - including `npm ci` - runs again.

Copy the lockfile first, install, then copy the rest:

```dockerfile
FROM node:20-alpine AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci
COPY . .
RUN npm run build
```

Now `npm ci` is only re-run when `package.json` or `package-lock.json` change. The `--mount=type=cache` line keeps npm's download cache between builds even when the lockfile does change, so that case gets faster too (needs BuildKit, the default in current Docker).

I also added a `.dockerignore` with `node_modules`, `dist` and `.git` - they were being sent in the build context (~480 MB) on every build.

Locally a css-only change now rebuilds in ~25s.""", ev=True),
   U("locally yes, but in github actions it's still 6 min every time"),
   A("""CI runners are fresh VMs, so there's no local layer cache to reuse - every build starts empty. You need to export the cache somewhere and import it on the next run. With `docker/build-push-action` the GitHub Actions cache backend does that:

```yaml
      - uses: docker/setup-buildx-action@v3
      - uses: docker/build-push-action@v6
        with:
          context: .
          push: ${{ github.ref == 'refs/heads/main' }}
          tags: ghcr.io/acme/dashboard-ui:${{ github.sha }}
          cache-from: type=gha
          cache-to: type=gha,mode=max
```

`mode=max` also caches the intermediate `build` stage layers, which is where `npm ci` lives - with the default `min` only the final stage would be cached and you'd gain nothing. First run after the change fills the cache; the next css-only PR built in 1m40s.""", ev=True)])


# --------------------------------------------------------------------------------------

def uuid_from(rng):
    h = '%032x' % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:32]}"


def ts(dt):
    return dt.strftime('%Y-%m-%dT%H:%M:%S.') + f"{dt.microsecond // 1000:03d}Z"


def write(sess, seed):
    rng = random.Random(seed)
    sid = uuid_from(rng)
    t = datetime.datetime.fromisoformat(sess['start'])
    base = dict(isSidechain=False, userType="external", cwd=sess['cwd'], sessionId=sid,
                version=VERSION, gitBranch=sess['branch'])
    out, parent, evidence = [], None, []

    def line(kind, message, extra=None, secs=3):
        nonlocal parent, t
        t += datetime.timedelta(seconds=secs, milliseconds=rng.randint(0, 999))
        u = uuid_from(rng)
        d = dict(parentUuid=parent, **base)
        d['type'] = kind
        d['message'] = message
        if extra:
            d.update(extra)
        d['uuid'] = u
        d['timestamp'] = ts(t)
        out.append(d)
        parent = u
        return u

    def amsg(blocks, text_len):
        return dict(model=MODEL, id="msg_01" + ''.join(rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789') for _ in range(22)),
                    type="message", role="assistant", content=blocks, stop_reason=None,
                    stop_sequence=None,
                    usage=dict(input_tokens=rng.randint(2, 9), cache_creation_input_tokens=rng.randint(200, 4000),
                               cache_read_input_tokens=rng.randint(15000, 30000),
                               output_tokens=max(1, text_len // 4), service_tier="standard"))

    def req():
        return "req_011C" + ''.join(rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789') for _ in range(18))

    for m in sess['msgs']:
        if m['role'] == 'user':
            u = line('user', dict(role='user', content=m['text']),
                     dict(permissionMode='default'), secs=rng.randint(20, 240))
        elif m['role'] == 'assistant':
            u = line('assistant', amsg([dict(type='text', text=m['text'])], len(m['text'])),
                     dict(requestId=req()), secs=rng.randint(8, 60))
        else:  # tool
            msg = amsg([dict(type='text', text=m['text'])], len(m['text']))
            rid = req()
            u = line('assistant', msg, dict(requestId=rid), secs=rng.randint(3, 10))
            tid = "toolu_01" + ''.join(rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789') for _ in range(22))
            msg2 = dict(msg, content=[dict(type='tool_use', id=tid, name=m['name'], input=m['input'])])
            tu = line('assistant', msg2, dict(requestId=rid), secs=1)
            line('user', dict(role='user', content=[dict(tool_use_id=tid, type='tool_result', content=m['result'])]),
                 dict(toolUseResult=dict(stdout=m['result'], stderr="", interrupted=False) if m['name'] == 'Bash'
                      else dict(type="text", file=dict(filePath=m['input'].get('file_path'), content=m['result'])),
                      sourceToolAssistantUUID=tu), secs=rng.randint(1, 4))
        if m.get('ev'):
            evidence.append(f"{sid}:{u}")
    path = os.path.join(HERE, f"{sid}.jsonl")
    with open(path, 'w') as f:
        for d in out:
            f.write(json.dumps(d, ensure_ascii=False) + '\n')
    return sid, path, evidence, out


def main():
    index = []
    for i, s in enumerate(SESSIONS):
        sid, path, ev, out = write(s, 4900 + i)
        msgs = sum(1 for d in out if d['type'] in ('user', 'assistant'))
        index.append(dict(key=s['key'], session=f"sessions/{os.path.basename(path)}", sessionId=sid,
                          cwd=s['cwd'], lines=len(out), evidence=ev))
        print(s['key'], os.path.basename(path), len(out), 'lines', ev)
    with open(os.path.join(HERE, 'index.json'), 'w') as f:
        json.dump(index, f, indent=1)
        f.write('\n')


if __name__ == '__main__':
    main()
