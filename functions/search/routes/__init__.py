"""The search API's routers, one per audience: `files` (IAM), `me` (signed-in people), `docs`."""
