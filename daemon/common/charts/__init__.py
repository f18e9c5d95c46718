"""Small charts of an alert's value over its window, drawn without a plotting library's weight."""
