// Package magnumimport moves an existing Magnum's database into Magnetite:
// cluster templates, clusters with their node groups, quotas, and each
// cluster's certificate authorities where Magnum kept them in its own
// database (cert_manager_type x509keypair). It reads Magnum read-only, plans
// what happens to every row (import, already imported, or refused with the
// reason), and writes the plan through the store's ordinary methods, so a
// second run imports nothing twice.
//
// Magnum's schema is that of Debian's Magnum 15 (alembic head 7da8489d6a68,
// magnum/db/sqlalchemy/models.py); columns later releases added (the
// template's driver) are read when present.
package magnumimport
