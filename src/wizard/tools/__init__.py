"""The host's tools and the one security fence every harness uses."""
