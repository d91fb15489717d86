"""Code that runs as root on the head node, through the shipped sudoers rule: one small helper per action."""
