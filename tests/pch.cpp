// Translation unit that builds the tests' precompiled header.
