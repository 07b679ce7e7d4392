"""Reading a running cluster: `audit live`, `audit snapshot`, `audit rbac`.

Only this package imports the `kubernetes` client, and only its modules that
talk to a cluster do (`target`, `client`, `reader`, `fleet`), so `audit
--version`, offline audits and `audit rbac` never pay for it. Importing the
package itself imports nothing heavy.

Modules:

* `target`: kubeconfig / in-cluster configuration like kubectl (the
  kubeconfig read through the bounded YAML loader), the cluster fingerprint
  and the target guard.
* `exec_plugin`: exec credential plugins, run bounded in time and output.
* `safe_text`: what a kubeconfig or a server wrote, made safe to print
  (escapes spelled out, URL userinfo dropped).
* `client`: GET requests with bounded retries (backoff + jitter, Retry-After),
  bounded in time (a watchdog per attempt) and size, raw JSON parsed once.
* `discovery`: which group-kinds the API serves, at which versions, as which
  resources.
* `reader`: lists every kind the selected rules read, concurrently and
  paginated, into a `Snapshot` with coverage.
* `dump`: the snapshot file `audit snapshot` writes.
* `fleet`: several clusters at once.
* `rbac`: the least-privilege ClusterRole, generated from the rules.
"""
