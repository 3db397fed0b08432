"""`python -m nsysql ...`: the same command line as `nsysql ...`."""
from nsysql.cli.app import main

if __name__ == "__main__":
    main()
