"""Widgets of the viewer's main screen: the structure tree, the detail pane, the info bar, statistics, prompts."""
