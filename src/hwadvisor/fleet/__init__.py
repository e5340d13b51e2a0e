"""``hwadvisor fleet``: many machines' profiles in one embedded database, rolled up."""
