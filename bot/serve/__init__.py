"""`recipe-bot serve`: GitHub App webhooks in, a durable queue, the Actions-mode handler per delivery."""
