"""Commands of the accelerator API v2, one module per resource."""
