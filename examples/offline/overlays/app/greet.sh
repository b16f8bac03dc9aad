#!/bin/sh
# Prints the greeting the image was built with.
echo "${GREETING}, from the offline example"
