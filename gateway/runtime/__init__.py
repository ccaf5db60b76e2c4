"""The gateway runtime: the asyncio loop that drives the Node over real links."""
