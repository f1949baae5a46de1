"""``python -m ctxmode``: same as the ``ctxmode`` command."""

from ctxmode._entry import main

if __name__ == "__main__":
    main()
