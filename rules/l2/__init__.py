"""L2 announcements: which Services are announced on the LAN, and how."""
