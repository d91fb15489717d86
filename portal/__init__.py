"""DS Portal: the hub side (admin config, LDAP login, command line)."""
