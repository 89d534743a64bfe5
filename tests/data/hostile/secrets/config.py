wandb = dict(key='0123456789abcdef0123456789abcdef01234567', project='leaky')
db_url = 'postgresql://admin:pgS3cret@db:5432/runs'
ssh_key = '''-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACBSb2Y3ZmFrZWtleWZha2VrZXlmYWtla2V5ZmFrZWtleQAAAJgAAAAAAAAA
-----END OPENSSH PRIVATE KEY-----
'''
optimizer = dict(type='AdamW', lr=0.001)
