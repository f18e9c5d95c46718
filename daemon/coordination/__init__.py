"""HA coordination (DESIGN §11): the lease, the shared notification log and incidents' identity, behind one
interface (`Coordinator`) with two implementations: PostgreSQL for two or three daemons, the local SQLite
state file for one. The dispatcher talks to the interface only, so there is one dispatch path."""
