"""The SNAKE study: a reconfigurable systolic array on a 3D-stacked NMP logic die."""
