#!/usr/bin/env python3
"""Merely listing one collection with the official `kubernetes` client: a yardstick for `audit live`.

    python benchmarks/live_list.py KUBECONFIG [--path /api/v1/services] [--chunk-size 500] [--max-chunk-size 5000]

What any audit that reads a cluster through the official client pays at the least, as one
fresh process: the interpreter, `import kubernetes`, the kubeconfig, then the collection
listed page by page exactly as `audit live` pages it (a first page of `--chunk-size`
objects, later ones sized to the `remainingItemCount` the server gives, at most
`--max-chunk-size`), each page read raw (`_preload_content=False`, as the auditor reads
it) and decoded with `json.loads`, every page kept until the end, and the process ends as
`audit` does (without freeing them). Nothing is judged and nothing is printed but the
objects counted. benchmarks/live.py runs it in turn with the
audit, against the same server: `bare / slowest` is the floor the issue 15 ratio
(wall / slowest list) has for any reader built on this client, `wall / bare` what the
audit adds to merely listing (the live counterpart of the offline targets' `json.load`).

Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("kubeconfig")
    parser.add_argument("--path", default="/api/v1/services", help="the collection listed")
    parser.add_argument("--chunk-size", type=int, default=500, help="objects in the first page")
    parser.add_argument("--max-chunk-size", type=int, default=5000, help="objects in any later page")
    args = parser.parse_args(argv)

    from kubernetes import client, config

    config.load_kube_config(config_file=args.kubeconfig)
    api = client.ApiClient()
    pages = []
    limit, token = args.chunk_size, None
    while True:
        query = [("limit", str(limit))] + ([("continue", token)] if token else [])
        method, url, headers, _, _ = api.param_serialize("GET", args.path, query_params=query,
                                                        header_params={"Accept": "application/json"},
                                                        auth_settings=["BearerToken"])
        answer = api.rest_client.request(method, url, headers=headers)
        page = json.loads(answer.response.data)
        pages.append(page)
        token = page["metadata"].get("continue")
        if not token:
            break
        remaining = page["metadata"].get("remainingItemCount")
        limit = max(args.chunk_size, min(args.max_chunk_size, remaining if remaining else 2 * limit))
    print(sum(len(page["items"]) for page in pages), flush=True)
    # Ends as `audit` does (os._exit once its output is flushed, auditor/cli): freeing every page's
    # objects one by one would add ~0.1 s that no reader needs to pay, and this is the floor.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
