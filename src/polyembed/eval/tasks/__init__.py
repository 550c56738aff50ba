"""Built-in tasks; importing this package registers them."""

from polyembed.eval.tasks import bias, geometry, mcqa, mining, retrieval, sts  # noqa: F401
