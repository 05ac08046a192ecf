"""The Flask app: chat and admin pages, the JSON API, SSE streams and the host websocket."""
