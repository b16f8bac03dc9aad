#!/bin/sh
# Greets in the offline image's own words, then says which layer it is.
/opt/app/greet.sh
echo "and hello from ${GREETER}"
