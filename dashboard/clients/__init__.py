"""Per-area API calls built on `dashboard.api_client.ApiClient.get/post`."""
