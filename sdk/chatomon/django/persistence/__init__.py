"""Where a turn is stored: `DjangoStore`, the conversation store on the ORM, and its queries."""
