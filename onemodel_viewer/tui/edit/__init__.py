"""The viewer's edit mode: edit the selection, see the verdict change."""
