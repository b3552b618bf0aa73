#!/bin/sh
# tracer's preremove. rpm %preun: $1 is 0 on erase, 1 on upgrade. deb
# prerm: remove, upgrade, deconfigure or failed-upgrade.
case "$1" in
0 | remove | deconfigure) ;;
*) exit 0 ;; # an upgrade: the service goes on and is restarted after
esac
if [ -d /run/systemd/system ]; then
	# Stopping lets tracer remove its rules or probes (SIGTERM).
	systemctl disable --now tracer.service >/dev/null 2>&1 || :
elif command -v systemctl >/dev/null 2>&1; then
	# No systemd running: only the links systemctl enable made.
	systemctl --no-reload disable tracer.service >/dev/null 2>&1 || :
fi
# What a killed tracer left: its audit rules and the settings it recorded
# in /run/tracer. Never what a running tracer holds, never the node's own
# rules.
/usr/bin/tracer cleanup || :
exit 0
