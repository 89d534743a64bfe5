wandb = dict(key='0123456789abcdef0123456789abcdef01234567', project='leaky')
db_url = 'postgresql://admin:pgS3cret@db:5432/runs'
ssh_key = '''@@PEM@@'''
optimizer = dict(type='AdamW', lr=0.001)
