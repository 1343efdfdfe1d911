"""The dashboard's only I/O: one typed client module per API area.

Modules:
- `client`: the transport (`ApiClient.get/post/put/delete/get_text`, `ApiError`,
  `current_client`, `install_client`, `detail_text`); forwards the browser's session headers.
- `traces`: the trace list, one trace, its top kernels, delete; the upload answer's shape.
- `me`: who the API takes the browser's user to be.
- `views`: a trace's views (summary, kernels table, roofline, memory, findings, compare).
- `timeline`: the timeline window, overview, steps and step marker, search, gaps, events.
- `benchmarks`: benchmark specs, runs and runners.
- `compile_view`: a trace's torch.compile phases, compiles and compiled regions.
- `metrics`: the SLA board, metric series, metric runs, baseline acceptance.

Each area module holds its calls and the TypedDicts they return.
`tests/dashboard/test_api_contract.py` checks every TypedDict against the API's OpenAPI
schema, so a field the API renames fails a test rather than a page.
"""

__all__: list[str] = []
