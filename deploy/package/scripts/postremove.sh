#!/bin/sh
# tracer's postremove. rpm %postun: $1 is 0 on erase, 1 on upgrade. deb
# postrm: remove, purge, upgrade, ...
if [ "$1" = purge ]; then
	# The event logs go with the configuration (rpm -e keeps them).
	rm -rf /var/log/tracer
fi
[ -d /run/systemd/system ] || exit 0
systemctl daemon-reload >/dev/null 2>&1 || :
case "$1" in
1) systemctl try-restart tracer.service >/dev/null 2>&1 || : ;; # rpm upgrade
0 | remove)
	# The postinstall made it; other tracers may still use it.
	rmdir /run/tracer 2>/dev/null || :
	;;
esac
exit 0
