"""wizard's loggers. A library logs nowhere by default (no bare warnings on a user's
stderr): the `wizard` logger has a `NullHandler` from the first module that asks for a logger
here, not from the package's import, which loads nothing (`logging` alone takes about 20 ms
here, on the way to a pi run's engine start). A run routes wizard's log records into its own
log file (`launch`)."""

import logging

logging.getLogger("wizard").addHandler(logging.NullHandler())


def logger(name: str) -> logging.Logger:
    """The logger of wizard's module `name`."""
    return logging.getLogger(name)
