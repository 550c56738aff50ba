"""Built-in tasks; importing this package registers them."""
