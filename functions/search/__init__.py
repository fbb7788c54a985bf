"""The search Lambda behind API Gateway."""
