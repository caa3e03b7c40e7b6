"""Screens over the viewer: help, layout, neighbourhood, operator schema, parameters, problems, values, used-by."""
