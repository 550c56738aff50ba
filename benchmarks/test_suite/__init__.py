"""The README's two commands from a fresh clone: the test suite serial against parallel, and the demo."""
