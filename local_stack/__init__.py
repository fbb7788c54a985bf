"""The local stack: the real handlers on moto, with stand-ins for the event source mapping and API Gateway."""
