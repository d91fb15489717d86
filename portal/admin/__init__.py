"""The `dsportal` admin command: run by an admin from a shell on the head node (or a build host)."""
