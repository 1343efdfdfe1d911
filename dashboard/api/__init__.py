"""Per-area API calls built on `dashboard.api.client.ApiClient.get/post`."""
