"""`python -m nsysql ...`: the same command line as `nsysql ...`."""
from .cli import main

if __name__ == "__main__":
    main()
