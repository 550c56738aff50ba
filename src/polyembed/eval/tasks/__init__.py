"""Built-in tasks; importing this package registers them."""

from polyembed.eval.tasks import alignment, bias, geometry, mcqa, mining, retrieval, sts  # noqa: F401
