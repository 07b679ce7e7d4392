"""Reading a running cluster: `audit live`, `audit snapshot`, `audit rbac`.

Only this package imports the `kubernetes` client, and only its modules that
talk to a cluster do (`target`, `client`, `reader`, `fleet`), so `audit
--version`, offline audits and `audit rbac` never pay for it. Importing the
package itself imports nothing heavy.

Modules:

* `target`: kubeconfig / in-cluster configuration like kubectl, the cluster
  fingerprint and the target guard.
* `client`: GET requests with bounded retries (backoff + jitter, Retry-After),
  raw JSON parsed once.
* `discovery`: which group-kinds the API serves, at which versions, as which
  resources.
* `reader`: lists every kind the selected rules read, concurrently and
  paginated, into a `Snapshot` with coverage.
* `dump`: the snapshot file `audit snapshot` writes.
* `fleet`: several clusters at once.
* `rbac`: the least-privilege ClusterRole, generated from the rules.
"""
