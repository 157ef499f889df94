from storbench.cli import entry

entry()
