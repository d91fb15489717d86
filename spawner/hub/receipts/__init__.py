"""Receipts, the hub's side: a session's or run's request, environment and use as one JSON document.

receipt.py   the receipt from the user's record and the job's environment file; what cannot be had again (pure)
service.py   a receipt of the user's: their record, the job's file read as the user, what is offered now
handlers.py  GET /hub/api/dsportal/receipts/JOB_ID
"""
