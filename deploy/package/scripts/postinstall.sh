#!/bin/sh
# tracer's postinstall. rpm %post: $1 is 1 on install, 2 on upgrade. deb
# postinst: $1 is configure, $2 the version before (empty on install).
# tracer.service is never enabled or started here: the admin chooses the
# backend in /etc/sysconfig/tracer or /etc/default/tracer first, then runs
# systemctl enable --now tracer. Without a running systemd (a container,
# an image being built) there is nothing to do.
[ -d /run/systemd/system ] || exit 0
# /run/tracer now, not only from the next boot on: the unit's
# ReadWritePaths needs it.
systemd-tmpfiles --create tracer.conf >/dev/null 2>&1 || :
systemctl daemon-reload >/dev/null 2>&1 || :
# A deb upgrade restarts a running tracer with the new binary (an rpm
# upgrade does it in the old package's postremove).
if [ "$1" = configure ] && [ -n "$2" ]; then
	systemctl try-restart tracer.service >/dev/null 2>&1 || :
fi
exit 0
