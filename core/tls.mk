# The TLS bundle: certificates, internal CA, policy, ticket keys, session cache.
core_tls_sources += \
	core/tls.c core/tls.h core/tls_api.c core/tls_api.h \
	core/tls_bundle.c core/tls_bundle.h core/tls_ca.c core/tls_ca.h \
	core/tls_cert.c core/tls_cert.h core/tls_policy.c core/tls_policy.h \
	core/tls_policy_store.c core/tls_policy_store.h \
	core/tls_session_cache.c core/tls_session_cache.h \
	core/tls_tickets.c core/tls_tickets.h
